//! A debuginfod client: a binary's debug file fetched by build-id from the servers in
//! `DEBUGINFOD_URLS`, cached where elfutils' client caches it, so gdb and tandem share
//! one cache.
//!
//! Lookup: the cache (`$DEBUGINFOD_CACHE_PATH`, else `$XDG_CACHE_HOME/debuginfod_client`,
//! else `~/.cache/debuginfod_client`; file `<hex>/debuginfo`) first, which needs no
//! network; then each server in turn, `GET URL/buildid/HEX/debuginfo`. A download is
//! written to a temporary file beside its cache entry and renamed into place only after
//! its build-id was checked, so the cache never holds a wrong or half-written file.
//!
//! `http://` servers are asked by `http.rs` (std's `TcpStream`); `https://` servers through
//! the system's `curl` (`curl.rs`), so no TLS stack is compiled into tandem and curl brings
//! the system's CA store, `CURL_CA_BUNDLE` for a private CA, proxies and HTTP/2. Both keep
//! one contract: the body streamed into the temporary file, progress, the timeouts,
//! cancellation within 100 ms, an HTTP error as [`Error::Status`].

mod curl;
mod http;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How long connecting to a server may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a server may send nothing before it is given up (elfutils' default for
/// `DEBUGINFOD_TIMEOUT`).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(90);

/// Why a debug file could not be had.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// `DEBUGINFOD_URLS` names no server.
    #[error("no debuginfod server is configured (DEBUGINFOD_URLS is empty)")]
    NoServers,
    /// The download was cancelled by the caller.
    #[error("the download was cancelled")]
    Cancelled,
    /// The URL is not one this client can use.
    #[error("{url}: {reason}")]
    BadUrl {
        /// The server's URL.
        url: String,
        /// Why.
        reason: String,
    },
    /// The server answered with an HTTP error (404: it has no such build-id).
    #[error("{url}: the server answered HTTP {status}")]
    Status {
        /// The file's URL.
        url: String,
        /// The HTTP status.
        status: u16,
    },
    /// The server sent nothing for the timeout.
    #[error("{url}: no data for {seconds} s (DEBUGINFOD_TIMEOUT)")]
    Timeout {
        /// The file's URL.
        url: String,
        /// The timeout.
        seconds: u64,
    },
    /// The server sent something that is not an HTTP answer.
    #[error("{url}: {reason}")]
    Protocol {
        /// The file's URL.
        url: String,
        /// What was wrong.
        reason: String,
    },
    /// The served file is not the debug file of this build.
    #[error("{url}: the served file has build-id {found}, not {expected}: rejected")]
    WrongBuildId {
        /// The file's URL.
        url: String,
        /// The build-id asked for.
        expected: String,
        /// The served file's build-id (`none` when it has none or is not ELF).
        found: String,
    },
    /// Reading or writing failed (network or cache).
    #[error("{context}: {source}")]
    Io {
        /// The URL or cache path involved.
        context: String,
        /// The error.
        source: std::io::Error,
    },
    /// curl (which fetches `https://` URLs) is missing or failed.
    #[error("{url}: {reason}")]
    Curl {
        /// The file's URL.
        url: String,
        /// curl's message, or why curl could not run.
        reason: String,
    },
    /// Every server failed; each one's reason.
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    AllFailed(Vec<Error>),
}

/// How far a download is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    /// Bytes received so far.
    pub received: u64,
    /// The file's size, when the server said it.
    pub total: Option<u64>,
}

/// A flag the caller sets to stop a download; cheap to clone and share across threads.
#[derive(Clone, Debug, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    /// Asks the download to stop; it ends with [`Error::Cancelled`] within a fraction of a
    /// second.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Whether [`Cancel::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// The servers, the cache and the timeouts.
#[derive(Clone, Debug)]
pub struct Client {
    urls: Vec<String>,
    cache: PathBuf,
    timeout: Duration,
    connect_timeout: Duration,
    /// The program that fetches `https://` URLs.
    curl: PathBuf,
}

impl Client {
    /// The client the environment configures: `None` when `DEBUGINFOD_URLS` is unset or
    /// names no server. `DEBUGINFOD_TIMEOUT` (seconds) overrides the 90 s idle timeout.
    pub fn from_env() -> Option<Client> {
        let urls = std::env::var("DEBUGINFOD_URLS").ok()?;
        let urls: Vec<String> = urls.split_whitespace().map(str::to_string).collect();
        if urls.is_empty() {
            return None;
        }
        let mut client = Client::new(urls, cache_dir());
        if let Some(secs) = std::env::var("DEBUGINFOD_TIMEOUT")
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .filter(|s| *s > 0)
        {
            client.timeout = Duration::from_secs(secs);
        }
        Some(client)
    }

    /// A client of these servers with this cache directory.
    pub fn new(urls: Vec<String>, cache: PathBuf) -> Client {
        Client {
            urls,
            cache,
            timeout: DEFAULT_TIMEOUT,
            connect_timeout: CONNECT_TIMEOUT,
            curl: PathBuf::from("curl"),
        }
    }

    /// The servers, in the order they are asked.
    pub fn urls(&self) -> &[String] {
        &self.urls
    }

    /// The cache directory.
    pub fn cache(&self) -> &Path {
        &self.cache
    }

    /// The cached debug file of `build_id`, when there is a usable one.
    pub fn cached(&self, build_id: &[u8]) -> Option<PathBuf> {
        cached_in(&self.cache, build_id)
    }

    /// The debug file of `build_id`: the cached one, else downloaded from the first server
    /// that has it, verified and cached. `progress` is called as bytes arrive.
    pub fn fetch(
        &self,
        build_id: &[u8],
        progress: &mut dyn FnMut(Progress),
        cancel: &Cancel,
    ) -> Result<PathBuf, Error> {
        if let Some(hit) = self.cached(build_id) {
            return Ok(hit);
        }
        if self.urls.is_empty() {
            return Err(Error::NoServers);
        }
        let hex = hex(build_id);
        let mut errors = Vec::new();
        for base in &self.urls {
            let url = format!("{}/buildid/{hex}/debuginfo", base.trim_end_matches('/'));
            match self.download(&url, build_id, progress, cancel) {
                Ok(path) => return Ok(path),
                Err(Error::Cancelled) => return Err(Error::Cancelled),
                Err(e) => {
                    tracing::info!("debuginfod: {e}");
                    errors.push(e);
                }
            }
        }
        Err(if errors.len() == 1 {
            errors.remove(0)
        } else {
            Error::AllFailed(errors)
        })
    }

    fn download(
        &self,
        url: &str,
        build_id: &[u8],
        progress: &mut dyn FnMut(Progress),
        cancel: &Cancel,
    ) -> Result<PathBuf, Error> {
        let dir = self.cache.join(hex(build_id));
        std::fs::create_dir_all(&dir).map_err(|source| Error::Io {
            context: dir.display().to_string(),
            source,
        })?;
        // One name per download, also between sessions of one process.
        static DOWNLOADS: AtomicU64 = AtomicU64::new(0);
        let n = DOWNLOADS.fetch_add(1, Ordering::Relaxed);
        let tmp = dir.join(format!(".debuginfo.tandem-{}-{n}.tmp", std::process::id()));
        let result = (|| {
            let mut file = std::fs::File::create(&tmp).map_err(|source| Error::Io {
                context: tmp.display().to_string(),
                source,
            })?;
            let limits = http::Limits {
                connect: self.connect_timeout,
                idle: self.timeout,
            };
            if url.starts_with("https://") {
                let heads = tmp.with_extension("heads");
                curl::get(&self.curl, url, &mut file, &heads, limits, progress, cancel)?;
            } else {
                http::get(url, &mut file, limits, progress, cancel)?;
            }
            file.flush().map_err(|source| Error::Io {
                context: tmp.display().to_string(),
                source,
            })?;
            drop(file);
            let found = build_id_of(&tmp);
            if found.as_deref() != Some(build_id) {
                return Err(Error::WrongBuildId {
                    url: url.to_string(),
                    expected: hex(build_id),
                    found: found.map_or_else(|| "none".to_string(), |f| hex(&f)),
                });
            }
            let target = dir.join("debuginfo");
            std::fs::rename(&tmp, &target).map_err(|source| Error::Io {
                context: target.display().to_string(),
                source,
            })?;
            Ok(target)
        })();
        if result.is_err() {
            let _ = std::fs::remove_file(&tmp);
            // An empty directory is no cache entry; elfutils would see none either.
            let _ = std::fs::remove_dir(&dir);
        }
        result
    }
}

/// The cache directory elfutils' client uses: `$DEBUGINFOD_CACHE_PATH`, else
/// `$XDG_CACHE_HOME/debuginfod_client`, else `$HOME/.cache/debuginfod_client`.
pub fn cache_dir() -> PathBuf {
    let set = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(p) = set("DEBUGINFOD_CACHE_PATH") {
        return PathBuf::from(p);
    }
    if let Some(p) = set("XDG_CACHE_HOME") {
        return PathBuf::from(p).join("debuginfod_client");
    }
    let home = set("HOME").map_or_else(|| PathBuf::from("/"), PathBuf::from);
    home.join(".cache").join("debuginfod_client")
}

/// The debug file of `build_id` in the cache at `cache`, when it is there and usable:
/// elfutils records a failed lookup as an empty file, and a file of another build is
/// not this one's.
pub fn cached_in(cache: &Path, build_id: &[u8]) -> Option<PathBuf> {
    if build_id.is_empty() {
        return None;
    }
    let path = cache.join(hex(build_id)).join("debuginfo");
    let meta = std::fs::metadata(&path).ok()?;
    if !meta.is_file() || meta.len() == 0 {
        return None;
    }
    if build_id_of(&path).as_deref() != Some(build_id) {
        tracing::warn!(path = %path.display(), "cached debug file of another build ignored");
        return None;
    }
    Some(path)
}

/// A build-id in the lowercase hex debuginfod URLs and cache paths use.
pub fn hex(build_id: &[u8]) -> String {
    build_id.iter().map(|b| format!("{b:02x}")).collect()
}

/// The GNU build-id of an ELF file, read without loading the file.
fn build_id_of(path: &Path) -> Option<Vec<u8>> {
    let file = std::fs::File::open(path).ok()?;
    let cache = object::ReadCache::new(file);
    let parsed = object::File::parse(&cache).ok()?;
    use object::Object;
    parsed.build_id().ok().flatten().map(<[u8]>::to_vec)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("debuginfod-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
        dir
    }

    #[test]
    fn negative_and_foreign_cache_entries_are_no_hits() {
        let cache = scratch("cache");
        let id = [0xabu8, 0xcd, 0xef, 0x01];
        assert_eq!(hex(&id), "abcdef01");
        assert_eq!(cached_in(&cache, &id), None, "nothing there");
        let entry = cache.join("abcdef01");
        std::fs::create_dir_all(&entry).unwrap_or_else(|e| panic!("{e}"));
        // elfutils records a failed lookup as an empty file.
        std::fs::write(entry.join("debuginfo"), b"").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(cached_in(&cache, &id), None, "an empty file");
        std::fs::write(entry.join("debuginfo"), b"not ELF").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(cached_in(&cache, &id), None, "not ELF");
        assert_eq!(cached_in(&cache, &[]), None, "no build-id");
        let _ = std::fs::remove_dir_all(&cache);
    }

    #[test]
    fn an_unreachable_server_fails_fast_and_leaves_no_entry() {
        let cache = scratch("refused");
        // A port nobody listens on: bound, then closed.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap_or_else(|e| panic!("{e}"));
        let client = Client::new(
            vec![
                format!("http://127.0.0.1:{port}"),
                format!("https://127.0.0.1:{port}/tls"),
            ],
            cache.clone(),
        );
        let started = std::time::Instant::now();
        let err = client
            .fetch(&[1, 2, 3, 4], &mut |_| {}, &Cancel::default())
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        assert!(err.contains(&format!("http://127.0.0.1:{port}/")), "{err}");
        // Over https, curl's own words (a refused connection is its error 7).
        assert!(
            err.contains(&format!("https://127.0.0.1:{port}/tls/")) && err.contains("curl: (7)"),
            "{err}"
        );
        assert!(!cache.join("01020304").exists());
        let _ = std::fs::remove_dir_all(&cache);
    }

    #[test]
    fn https_without_curl_says_so_and_asks_the_next_server() {
        let cache = scratch("no-curl");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap_or_else(|e| panic!("{e}"));
        let mut client = Client::new(
            vec![
                "https://debuginfod.example".to_string(),
                format!("http://127.0.0.1:{port}"),
            ],
            cache.clone(),
        );
        client.curl = cache.join("no-such-curl");
        let err = client
            .fetch(&[1, 2, 3, 4], &mut |_| {}, &Cancel::default())
            .err();
        let Some(Error::AllFailed(errors)) = err else {
            panic!("{err:?}");
        };
        let first = errors[0].to_string();
        assert!(first.contains("https needs curl on PATH"), "{first}");
        assert!(
            errors[1].to_string().contains(&format!("127.0.0.1:{port}")),
            "the next server was asked: {errors:?}"
        );
        assert!(!cache.join("01020304").exists());
        let _ = std::fs::remove_dir_all(&cache);
    }
}
