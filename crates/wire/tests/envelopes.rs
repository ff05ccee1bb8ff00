//! JSON-RPC 2.0 and DAP envelope decoding: ids echoed exactly, batches and bad shapes refused.
#![allow(clippy::unwrap_used)] // Test code: a failed unwrap is a failed test.

use serde_json::json;
use wire::jsonrpc::{self, codes, Id, Message};

fn decode(v: serde_json::Value) -> Result<Message, jsonrpc::DecodeError> {
    jsonrpc::decode(&serde_json::to_vec(&v).unwrap())
}

#[test]
fn number_and_string_ids_are_different_and_echoed_exactly() {
    let Message::Request(a) = decode(json!({"jsonrpc":"2.0","id":1,"method":"m"})).unwrap() else {
        panic!()
    };
    let Message::Request(b) = decode(json!({"jsonrpc":"2.0","id":"1","method":"m"})).unwrap()
    else {
        panic!()
    };
    assert_ne!(a.id, b.id);
    let out_a: serde_json::Value = serde_json::from_slice(&jsonrpc::encode(&Message::Response(
        jsonrpc::Response::ok(a.id, json!(null)),
    )))
    .unwrap();
    let out_b: serde_json::Value = serde_json::from_slice(&jsonrpc::encode(&Message::Response(
        jsonrpc::Response::ok(b.id, json!(null)),
    )))
    .unwrap();
    assert_eq!(out_a["id"], json!(1));
    assert_eq!(out_b["id"], json!("1"));
    assert_eq!(out_a["jsonrpc"], "2.0");
    assert!(out_a.get("result").is_some() && out_a.get("error").is_none());
}

#[test]
fn large_and_negative_ids_survive() {
    for id in [json!(-5), json!(9007199254740993u64), json!("")] {
        let Message::Request(r) = decode(json!({"jsonrpc":"2.0","id":id,"method":"m"})).unwrap()
        else {
            panic!()
        };
        let out: serde_json::Value = serde_json::from_slice(&jsonrpc::encode(&Message::Response(
            jsonrpc::Response::ok(r.id, json!(1)),
        )))
        .unwrap();
        assert_eq!(out["id"], id);
    }
}

#[test]
fn notifications_and_responses() {
    assert!(matches!(
        decode(json!({"jsonrpc":"2.0","method":"n"})).unwrap(),
        Message::Notification(_)
    ));
    let Message::Response(r) = decode(json!({"jsonrpc":"2.0","id":3,"result":null})).unwrap()
    else {
        panic!()
    };
    assert_eq!(r.id, Some(Id::from(3)));
    let Message::Response(r) =
        decode(json!({"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"no"}})).unwrap()
    else {
        panic!()
    };
    assert_eq!(r.outcome.unwrap_err().code, codes::METHOD_NOT_FOUND);
}

#[test]
fn parse_errors_get_a_null_id() {
    let err = jsonrpc::decode(b"{not json").unwrap_err();
    let resp = err.to_response();
    assert_eq!(resp.id, None);
    assert_eq!(resp.outcome.unwrap_err().code, codes::PARSE_ERROR);
    let body: serde_json::Value =
        serde_json::from_slice(&jsonrpc::encode(&Message::Response(err.to_response()))).unwrap();
    assert_eq!(body["id"], json!(null));
}

#[test]
fn batches_are_invalid_requests() {
    for batch in [json!([]), json!([{"jsonrpc":"2.0","id":1,"method":"m"}])] {
        let err = decode(batch).unwrap_err();
        assert_eq!(
            err.to_response().outcome.unwrap_err().code,
            codes::INVALID_REQUEST
        );
    }
}

#[test]
fn invalid_shapes_keep_the_id_when_readable() {
    let cases = [
        (json!({"id":7,"method":"m"}), Some(Id::from(7))),
        (
            json!({"jsonrpc":"1.0","id":7,"method":"m"}),
            Some(Id::from(7)),
        ),
        (
            json!({"jsonrpc":"2.0","id":"x","method":5}),
            Some(Id::from("x")),
        ),
        (
            json!({"jsonrpc":"2.0","id":7,"method":"m","params":3}),
            Some(Id::from(7)),
        ),
        (json!({"jsonrpc":"2.0","id":{"a":1},"method":"m"}), None),
        (json!({"jsonrpc":"2.0","id":null,"method":"m"}), None),
        (json!({"jsonrpc":"2.0"}), None),
        (
            json!({"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":""}}),
            Some(Id::from(1)),
        ),
        (json!(42), None),
    ];
    for (msg, id) in cases {
        let err = decode(msg.clone()).unwrap_err();
        let resp = err.to_response();
        assert_eq!(resp.id, id, "{msg}");
        assert_eq!(
            resp.outcome.unwrap_err().code,
            codes::INVALID_REQUEST,
            "{msg}"
        );
    }
}

#[test]
fn dap_envelopes_round_trip_and_keep_what_they_can() {
    use wire::dap::{self, ProtocolMessage};
    let msg = dap::decode(
        br#"{"seq":4,"type":"request","command":"initialize","arguments":{"adapterID":"x"}}"#,
    )
    .unwrap();
    let ProtocolMessage::Request(req) = &msg else {
        panic!()
    };
    assert_eq!((req.seq, req.command.as_str()), (4, "initialize"));
    let back: serde_json::Value = serde_json::from_slice(&dap::encode(&msg)).unwrap();
    assert_eq!(back["type"], "request");

    let err = dap::decode(br#"{"seq":9,"command":"next"}"#).unwrap_err();
    assert_eq!((err.seq, err.command.as_deref()), (Some(9), Some("next")));
    let err = dap::decode(b"\xff\xfe").unwrap_err();
    assert_eq!(err.seq, None);
    // Broken JSON still gives up the seq and command it plainly contains.
    let err =
        dap::decode(br#"{"seq" : 12, "type": "request", "command":"stackTrace", "arguments": {"#)
            .unwrap_err();
    assert_eq!(
        (err.seq, err.command.as_deref()),
        (Some(12), Some("stackTrace"))
    );

    let resp = ProtocolMessage::Response(dap::Response {
        seq: 1,
        request_seq: 4,
        success: true,
        command: "initialize".into(),
        message: None,
        body: None,
    });
    let v: serde_json::Value = serde_json::from_slice(&dap::encode(&resp)).unwrap();
    assert_eq!(
        v,
        json!({"seq":1,"type":"response","request_seq":4,"success":true,"command":"initialize"})
    );
}

/// Every kind of message is written as the JSON object of its parts, with the keys sorted
/// (the bytes a `serde_json::Value` of the same object gives).
#[test]
fn messages_are_encoded_as_their_objects() {
    let params = json!({"b": [1, 2.5, "x"], "a": {"z": null, "y": true}});
    let cases = [
        (
            Message::Request(jsonrpc::Request {
                id: Id::from(7),
                method: "m".into(),
                params: Some(params.clone()),
            }),
            json!({"jsonrpc": "2.0", "id": 7, "method": "m", "params": params}),
        ),
        (
            Message::Request(jsonrpc::Request {
                id: Id::from("s"),
                method: "m".into(),
                params: None,
            }),
            json!({"jsonrpc": "2.0", "id": "s", "method": "m"}),
        ),
        (
            Message::Notification(jsonrpc::Notification {
                method: "n".into(),
                params: Some(params.clone()),
            }),
            json!({"jsonrpc": "2.0", "method": "n", "params": params}),
        ),
        (
            Message::Response(jsonrpc::Response::ok(Id::from(-3), params.clone())),
            json!({"jsonrpc": "2.0", "id": -3, "result": params}),
        ),
        (
            Message::Response(jsonrpc::Response {
                id: None,
                outcome: Ok(json!(null)),
            }),
            json!({"jsonrpc": "2.0", "id": null, "result": null}),
        ),
        (
            Message::Response(jsonrpc::Response::err(
                Some(Id::from(1)),
                codes::INVALID_PARAMS,
                "bad",
            )),
            json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "bad"}}),
        ),
    ];
    for (message, object) in cases {
        assert_eq!(
            String::from_utf8(jsonrpc::encode(&message)).unwrap(),
            serde_json::to_string(&object).unwrap()
        );
    }
}
