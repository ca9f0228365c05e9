//! The OAuth records' store calls measured like every other store call (feature `oauth`):
//! each runs in an `agent.store` span and is counted under its `op` (`take_code`, `rotate`,
//! `access`, …), whichever store keeps the records.

use futures::future::BoxFuture;

use super::{Measured, StoreOp};
use crate::security::oauth::{
    AccessRecord, ClientRecord, CodeRecord, CodeTaken, GrantRecord, GrantStored, NewGrant,
    OAuthStore, Rotation,
};
use crate::security::store_error::StoreResult;

impl<S: OAuthStore + ?Sized> OAuthStore for Measured<S> {
    fn register_client(
        &self,
        client: ClientRecord,
        max: u64,
        now: u64,
    ) -> BoxFuture<'_, StoreResult<bool>> {
        self.run(StoreOp::register_client, |s| {
            s.register_client(client, max, now)
        })
    }

    fn find_client<'a>(
        &'a self,
        client_id: &'a str,
        now: u64,
    ) -> BoxFuture<'a, StoreResult<Option<ClientRecord>>> {
        self.run(StoreOp::find_client, |s| s.find_client(client_id, now))
    }

    fn client_used<'a>(
        &'a self,
        client_id: &'a str,
        expires_at: u64,
    ) -> BoxFuture<'a, StoreResult<()>> {
        self.run(StoreOp::client_used, |s| {
            s.client_used(client_id, expires_at)
        })
    }

    fn add_code(
        &self,
        hash: String,
        code: CodeRecord,
        max: u64,
        now: u64,
    ) -> BoxFuture<'_, StoreResult<bool>> {
        self.run(StoreOp::add_code, |s| s.add_code(hash, code, max, now))
    }

    fn take_code<'a>(&'a self, hash: &'a str, now: u64) -> BoxFuture<'a, StoreResult<CodeTaken>> {
        self.run(StoreOp::take_code, |s| s.take_code(hash, now))
    }

    fn create_grant(
        &self,
        grant: NewGrant,
        max: u64,
        now: u64,
    ) -> BoxFuture<'_, StoreResult<GrantStored>> {
        self.run(StoreOp::create_grant, |s| s.create_grant(grant, max, now))
    }

    fn rotate(&self, rotation: Rotation, now: u64) -> BoxFuture<'_, StoreResult<bool>> {
        self.run(StoreOp::rotate, |s| s.rotate(rotation, now))
    }

    fn grant_by_refresh<'a>(
        &'a self,
        hash: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<GrantRecord>>> {
        self.run(StoreOp::grant_by_refresh, |s| s.grant_by_refresh(hash))
    }

    fn grant_by_access<'a>(
        &'a self,
        hash: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<GrantRecord>>> {
        self.run(StoreOp::grant_by_access, |s| s.grant_by_access(hash))
    }

    fn access<'a>(
        &'a self,
        hash: &'a str,
        now: u64,
    ) -> BoxFuture<'a, StoreResult<Option<AccessRecord>>> {
        self.run(StoreOp::access, |s| s.access(hash, now))
    }

    fn revoke_grant<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<Option<GrantRecord>>> {
        self.run(StoreOp::revoke_grant, |s| s.revoke_grant(id))
    }

    fn revoke_access<'a>(&'a self, hash: &'a str) -> BoxFuture<'a, StoreResult<bool>> {
        self.run(StoreOp::revoke_access, |s| s.revoke_access(hash))
    }
}
