//! What every [`OAuthStore`] must do, as test bodies run against each implementation (memory
//! here, SQLite and a real PostgreSQL in `engine/store/sql_oauth_tests`): bounds, single-use
//! codes (a reuse before the grant is stored grants nothing), rotation as a compare-and-set,
//! reuse revoking the grant, expiry. Each body takes a fresh store.

use std::future::Future;
use std::sync::Arc;

use super::clients::{Clients, RegistrationError, RegistrationRequest};
use super::grants::{GrantError, Grants, Issued, Limits, Refreshed};
use super::records::{CodeRecord, CodeTaken};
use super::secret::{hash_of, SecretKind};
use super::store::{OAuthStore, RETIRED_PER_GRANT};

const LIMITS: Limits = Limits {
    code_ttl_ms: 60_000,
    access_ttl_ms: 3_600_000,
    grant_ttl_ms: 86_400_000,
    max_codes: 2,
    max_grants: 2,
};

fn code(expires_at: u64) -> CodeRecord {
    CodeRecord {
        client_id: "c".into(),
        redirect_uri: "http://localhost/cb".into(),
        challenge: "x".repeat(43),
        scope: "app:read".into(),
        uid: "u".into(),
        session_id: "s".into(),
        resource: "http://localhost/agent/mcp".into(),
        expires_at,
    }
}

async fn issue(grants: &Grants, now: u64) -> Issued {
    let secret = grants
        .add_code(code(now + 60_000), now)
        .await
        .unwrap()
        .unwrap();
    let hash = hash_of(SecretKind::Code, secret.expose()).unwrap();
    let CodeTaken::Fresh(code) = grants.take_code(&hash, now).await.unwrap() else {
        panic!("fresh")
    };
    grants
        .create_grant(&hash, code, "tid".into(), now)
        .await
        .unwrap()
}

fn refresh_hash(issued: &Issued) -> String {
    hash_of(SecretKind::Refresh, issued.refresh.expose()).unwrap()
}

fn access_hash(issued: &Issued) -> String {
    hash_of(SecretKind::Access, issued.access.expose()).unwrap()
}

/// Every body, each on a store `make` makes.
pub(crate) async fn all<F, Fut>(make: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn OAuthStore>>,
{
    codes_are_single_use_short_lived_and_bounded(make().await).await;
    refresh_rotates_and_reuse_revokes(make().await).await;
    racing_refreshes_have_one_winner(make().await).await;
    access_tokens_expire_and_grants_are_bounded(make().await).await;
    retired_and_access_tokens_are_bounded_per_grant(make().await).await;
    registrations_are_bounded_and_expire_unused(make().await).await;
}

async fn codes_are_single_use_short_lived_and_bounded(store: Arc<dyn OAuthStore>) {
    let grants = Grants::new(store, LIMITS);
    let a = grants.add_code(code(100), 0).await.unwrap().unwrap();
    let _b = grants.add_code(code(100), 0).await.unwrap().unwrap();
    assert!(matches!(grants.add_code(code(100), 0).await, Ok(Err(_))));
    let hash = hash_of(SecretKind::Code, a.expose()).unwrap();
    assert_eq!(
        grants.take_code(&hash, 50).await.unwrap(),
        CodeTaken::Fresh(code(100))
    );
    assert_eq!(
        grants.take_code(&hash, 51).await.unwrap(),
        CodeTaken::Reused(None)
    );
    assert_eq!(
        grants.take_code("nope", 51).await.unwrap(),
        CodeTaken::Unknown
    );
    // Expired codes make room and are refused.
    let c = grants.add_code(code(200), 150).await.unwrap().unwrap();
    let hash = hash_of(SecretKind::Code, c.expose()).unwrap();
    assert_eq!(
        grants.take_code(&hash, 200).await.unwrap(),
        CodeTaken::Expired
    );
    // A code that made a grant names it when presented again.
    let secret = grants.add_code(code(1_000), 300).await.unwrap().unwrap();
    let hash = hash_of(SecretKind::Code, secret.expose()).unwrap();
    let CodeTaken::Fresh(c) = grants.take_code(&hash, 300).await.unwrap() else {
        panic!("fresh")
    };
    let issued = grants
        .create_grant(&hash, c, "t".into(), 300)
        .await
        .unwrap();
    assert_eq!(
        grants.take_code(&hash, 301).await.unwrap(),
        CodeTaken::Reused(Some(issued.grant.id))
    );
    // A code presented again after it was taken and before its grant was stored (a replica
    // racing the exchange): the grant is never stored.
    let secret = grants.add_code(code(1_000), 400).await.unwrap().unwrap();
    let hash = hash_of(SecretKind::Code, secret.expose()).unwrap();
    let CodeTaken::Fresh(c) = grants.take_code(&hash, 400).await.unwrap() else {
        panic!("fresh")
    };
    assert_eq!(
        grants.take_code(&hash, 401).await.unwrap(),
        CodeTaken::Reused(None)
    );
    assert!(matches!(
        grants.create_grant(&hash, c, "t".into(), 402).await,
        Err(GrantError::CodeReused)
    ));
    assert_eq!(
        grants.take_code(&hash, 403).await.unwrap(),
        CodeTaken::Reused(None)
    );
}

async fn refresh_rotates_and_reuse_revokes(store: Arc<dyn OAuthStore>) {
    let grants = Grants::new(store, LIMITS);
    let first = issue(&grants, 0).await;
    let access = access_hash(&first);
    assert_eq!(grants.access(&access, 1).await.unwrap().unwrap().tid, "tid");
    let old = refresh_hash(&first);
    let Refreshed::Rotated(second) = grants.refresh(&old, "c", 10).await.unwrap() else {
        panic!("rotated")
    };
    assert_eq!(second.grant.generation, 1);
    // The first access token still works until its expiry.
    assert!(grants.access(&access, 11).await.unwrap().is_some());
    let new = refresh_hash(&second);
    assert!(matches!(
        grants.refresh(&new, "other", 11).await.unwrap(),
        Refreshed::Refused(_)
    ));
    let found = grants.grant_of_token(&new).await.unwrap().unwrap();
    assert_eq!(found.id, first.grant.id);
    // The old one again: the grant is revoked, every token of it stops.
    assert!(matches!(
        grants.refresh(&old, "c", 12).await.unwrap(),
        Refreshed::Reused(_)
    ));
    assert!(grants.access(&access, 13).await.unwrap().is_none());
    assert!(grants
        .access(&access_hash(&second), 13)
        .await
        .unwrap()
        .is_none());
    assert!(matches!(
        grants.refresh(&new, "c", 14).await.unwrap(),
        Refreshed::Refused("the grant was revoked")
    ));
}

async fn racing_refreshes_have_one_winner(store: Arc<dyn OAuthStore>) {
    let grants = Grants::new(store, LIMITS);
    let first = issue(&grants, 0).await;
    let hash = refresh_hash(&first);
    let (a, b) = tokio::join!(grants.refresh(&hash, "c", 5), grants.refresh(&hash, "c", 5));
    let outcomes = [a.unwrap(), b.unwrap()];
    let rotated: Vec<&Issued> = outcomes
        .iter()
        .filter_map(|o| match o {
            Refreshed::Rotated(issued) => Some(issued),
            _ => None,
        })
        .collect();
    assert!(rotated.len() <= 1, "two winners: {outcomes:?}");
    // The loser presented a token no longer current: a reuse, the grant is revoked (and so
    // is the winner's new token). Run one after the other, the second is the reuse too.
    assert!(outcomes.iter().any(|o| matches!(o, Refreshed::Reused(_))));
    for issued in rotated {
        assert!(grants
            .access(&access_hash(issued), 6)
            .await
            .unwrap()
            .is_none());
    }
}

async fn access_tokens_expire_and_grants_are_bounded(store: Arc<dyn OAuthStore>) {
    let grants = Grants::new(store, LIMITS);
    let one = issue(&grants, 0).await;
    let hash = access_hash(&one);
    assert!(grants
        .access(&hash, LIMITS.access_ttl_ms - 1)
        .await
        .unwrap()
        .is_some());
    assert!(grants
        .access(&hash, LIMITS.access_ttl_ms)
        .await
        .unwrap()
        .is_none());
    let two = issue(&grants, 0).await;
    let secret = grants.add_code(code(60_000), 0).await.unwrap().unwrap();
    let code_hash = hash_of(SecretKind::Code, secret.expose()).unwrap();
    let CodeTaken::Fresh(c) = grants.take_code(&code_hash, 0).await.unwrap() else {
        panic!("fresh")
    };
    assert!(matches!(
        grants
            .create_grant(&code_hash, c.clone(), "t".into(), 0)
            .await,
        Err(GrantError::Full(_))
    ));
    // A revoked grant frees its slot.
    let before = grants.revoke(&one.grant.id).await.unwrap().unwrap();
    assert!(!before.revoked);
    assert!(grants.grant_of_token(&hash).await.unwrap().is_none());
    assert!(grants
        .create_grant(&code_hash, c, "t".into(), 1)
        .await
        .is_ok());
    // Past its end a grant refuses to refresh.
    let end = two.grant.expires_at;
    assert!(matches!(
        grants.refresh(&refresh_hash(&two), "c", end).await.unwrap(),
        Refreshed::Refused(_)
    ));
}

async fn retired_and_access_tokens_are_bounded_per_grant(store: Arc<dyn OAuthStore>) {
    let grants = Grants::new(store, LIMITS);
    let first = issue(&grants, 0).await;
    let mut accesses = vec![access_hash(&first)];
    let mut refreshes = vec![refresh_hash(&first)];
    for now in 1..=RETIRED_PER_GRANT + 2 {
        let current = refreshes.last().unwrap().clone();
        let Refreshed::Rotated(next) = grants.refresh(&current, "c", now).await.unwrap() else {
            panic!("rotated")
        };
        accesses.push(access_hash(&next));
        refreshes.push(refresh_hash(&next));
    }
    // The 4 newest access tokens live; the older ones were retired.
    let n = accesses.len();
    for (i, hash) in accesses.iter().enumerate() {
        let live = grants.access(hash, 100).await.unwrap().is_some();
        assert_eq!(live, i + 4 >= n, "access token {i} of {n}");
    }
    // The oldest refresh token is forgotten (unknown, the grant stays); a remembered retired
    // one revokes the grant.
    assert!(matches!(
        grants.refresh(&refreshes[0], "c", 100).await.unwrap(),
        Refreshed::Refused("the refresh token is unknown")
    ));
    assert!(matches!(
        grants.refresh(&refreshes[n - 2], "c", 100).await.unwrap(),
        Refreshed::Reused(_)
    ));
}

async fn registrations_are_bounded_and_expire_unused(store: Arc<dyn OAuthStore>) {
    let clients = Clients::new(&[], store, 2, 1_000, 10_000).unwrap();
    let request = || -> RegistrationRequest {
        serde_json::from_value(serde_json::json!({
            "redirect_uris": ["http://localhost:1/cb"],
            "client_name": "Test",
            "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "logo_uri": "ignored",
        }))
        .unwrap()
    };
    let a = clients.register(request(), 0).await.unwrap();
    assert_eq!(a.client_name, "Test");
    let found = clients.find(&a.client_id, 999).await.unwrap().unwrap();
    assert_eq!(found.redirect_uris, ["http://localhost:1/cb"]);
    let b = clients.register(request(), 500).await.unwrap();
    assert!(matches!(
        clients.register(request(), 900).await,
        Err(RegistrationError::Full(2))
    ));
    // `a` expires unused at 1000, `b` is used and kept.
    clients.used(&b.client_id, 900).await.unwrap();
    assert!(clients.find(&a.client_id, 1_000).await.unwrap().is_none());
    assert!(clients.register(request(), 1_600).await.is_ok());
    assert!(clients.find(&b.client_id, 1_600).await.unwrap().is_some());
    assert!(clients.find(&b.client_id, 10_900).await.unwrap().is_none());
    assert!(clients.find("unknown", 0).await.unwrap().is_none());
}
