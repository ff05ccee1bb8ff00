//! Where a session's events go: into the channel [`Session::events`] reads, until an
//! owner installs a route that takes each event on the thread that produced it.
//!
//! A route saves the thread hop an owner with many views would otherwise add to every
//! stop (the engine's thread → the owner's pump → each view): with a route, the owner
//! fans the event out to its views from the engine's thread directly.

use std::sync::{Arc, Mutex};

use crossbeam_channel::{Receiver, Sender};

use super::{lock, SessionEvent};

/// A function that takes the session's events in order; see [`super::Session::route_events`].
pub type EventRoute = Box<dyn FnMut(SessionEvent) + Send>;

enum Route {
    Channel(Sender<SessionEvent>),
    Direct(EventRoute),
}

/// The sending side, shared by everything in the session that reports an event. Each
/// send holds one lock, so events keep their order across the switch to a route.
#[derive(Clone)]
pub(super) struct EventTx(Arc<Mutex<Route>>);

impl EventTx {
    pub(super) fn channel() -> (EventTx, Receiver<SessionEvent>) {
        let (tx, rx) = crossbeam_channel::unbounded();
        (EventTx(Arc::new(Mutex::new(Route::Channel(tx)))), rx)
    }

    /// Reports an event; false when nobody takes events any more.
    pub(super) fn send(&self, ev: SessionEvent) -> bool {
        match &mut *lock(&self.0) {
            Route::Channel(tx) => tx.send(ev).is_ok(),
            Route::Direct(route) => {
                route(ev);
                true
            }
        }
    }

    /// Hands what is still queued in `queued` to `route`, then every later event.
    pub(super) fn install(&self, queued: &Receiver<SessionEvent>, mut route: EventRoute) {
        let mut current = lock(&self.0);
        for ev in queued.try_iter() {
            route(ev);
        }
        *current = Route::Direct(route);
    }
}
