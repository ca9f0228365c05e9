//! The stores (memory, SQLite files, a real PostgreSQL): bounds, capacity, the conformance
//! suite, migrations, sessions, upgrades of earlier databases, the commit log, restarts,
//! replicas and fleets, TLS to PostgreSQL, the SQLite writer thread, and the chaos run. One
//! test binary; each module was a test file of its own.

mod bounds;
mod capacity;
mod chaos_keys;
mod commit_log;
mod conformance;
mod fleet_calls;
mod fleet_confirm;
mod fleet_faults;
mod fleet_limits;
mod fleet_pg_restart;
mod fleet_postgres;
mod fleet_resume;
mod health;
mod keyed_claim_refused;
mod lb_fleet;
mod lb_keyed;
mod lb_mcp;
mod migration;
mod postgres_tls;
mod replica_decisions;
mod restart_sqlite;
mod sessions;
mod shutdown;
mod sqlite_writer;
mod undo;
mod undo_races;
mod upgrade;
