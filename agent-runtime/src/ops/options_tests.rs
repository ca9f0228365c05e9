//! Tests of the server's options (`options.rs`).

use super::*;
use serde_json::json;

#[test]
fn the_options_deserialize_with_defaults_and_name_an_unknown_key() {
    let options: ServerOptions = serde_json::from_value(json!({
        "allow_anonymous": true,
        "trust_proxy": 2,
        "sliding_ttl": "2h",
        "hard_expiry": "7d",
        "max_wait": "30s",
        "rate_limit": "5/second",
        "allowed_hosts": ["agent.example.com"],
    }))
    .expect("reads");
    assert!(options.allow_anonymous);
    assert_eq!(options.trust_proxy.get(), 2);
    assert_eq!(options.sliding_ttl, Some(Duration::from_secs(7200)));
    assert_eq!(options.hard_expiry, Duration::from_secs(7 * 86_400));
    assert_eq!(options.max_wait, Duration::from_secs(30));
    assert_eq!(options.rate_limit.to_string(), "5/second");
    assert_eq!(options.allowed_hosts, ["agent.example.com"]);
    // Unsaid: the default.
    let defaults = ServerOptions::default();
    assert_eq!(options.lap_base_path, defaults.lap_base_path);
    assert_eq!(options.anonymous_mint_rate, defaults.anonymous_mint_rate);
    assert!(options.identity_key.is_none());
    // The token lifetimes' defaults: a one-hour sliding TTL, a 24 h hard expiry.
    assert_eq!(defaults.sliding_ttl, Some(Duration::from_secs(3600)));
    assert_eq!(defaults.hard_expiry, Duration::from_secs(86_400));
    let off: ServerOptions = serde_json::from_value(json!({"sliding_ttl": null})).unwrap();
    assert_eq!(off.sliding_ttl, None);

    let e = serde_json::from_value::<ServerOptions>(json!({"rate_limt": "1/second"}))
        .unwrap_err()
        .to_string();
    assert!(e.contains("unknown field `rate_limt`"), "{e}");
    let e = serde_json::from_value::<ServerOptions>(json!({"max_wait": "soon"}))
        .unwrap_err()
        .to_string();
    assert!(e.contains("soon"), "{e}");
    // The identity key is never read from a file.
    assert!(serde_json::from_value::<ServerOptions>(json!({"identity_key": "x"})).is_err());
}

#[cfg(all(feature = "mcp", feature = "pairing"))]
#[test]
fn the_nested_tables_deserialize_too() {
    let options: ServerOptions = serde_json::from_value(json!({
        "mcp": {"result_budget_chars": 9000, "confirm_in_client_ttl": "2m"},
        "pairing": {"grace": "5m", "native_apps": true},
    }))
    .expect("reads");
    assert_eq!(options.mcp.result_budget_chars, 9000);
    assert_eq!(options.mcp.confirm_in_client_ttl, Duration::from_secs(120));
    assert_eq!(options.mcp.max_sessions, McpOptions::default().max_sessions);
    assert_eq!(options.pairing.grace, Duration::from_secs(300));
    assert!(options.pairing.native_apps);
    let e = serde_json::from_value::<ServerOptions>(json!({"mcp": {"enabeld": false}}))
        .unwrap_err()
        .to_string();
    assert!(e.contains("enabeld"), "{e}");
}
