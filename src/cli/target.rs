//! Where an admin command runs: in this process when the data dir is free, or in the server
//! that holds it, through its admin socket. Either way `admin::execute` does the work.

use std::path::Path;

use anyhow::Context;
use serde_json::Value;

use crate::admin::client::{self, ClientError};
use crate::admin::{AdminContext, AdminRequest, execute};
use crate::clock::Clock;
use crate::store::data_dir::{DataDir, DataDirError, admin_socket_path};
use crate::store::{Store, StoreOptions};

pub fn run_admin(data_dir: &Path, request: AdminRequest, holder: &str) -> anyhow::Result<Value> {
    match DataDir::open(data_dir, holder) {
        Ok(dir) => run_here(dir, request),
        Err(DataDirError::Locked { path, holder }) => {
            match client::call(&admin_socket_path(data_dir), &request) {
                Ok(value) => Ok(value),
                Err(ClientError::Connect { .. }) => {
                    Err(DataDirError::Locked { path, holder }.into())
                }
                Err(other) => Err(other.into()),
            }
        }
        Err(other) => Err(other.into()),
    }
}

fn run_here(dir: DataDir, request: AdminRequest) -> anyhow::Result<Value> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let store = Store::open(&dir.database_path(), StoreOptions::default())?;
    let context = AdminContext {
        store: store.clone(),
        clock: Clock::system(),
        search: None,
        auth: None,
    };
    let result = runtime.block_on(async {
        let result = execute(&context, request).await;
        store.close().await;
        result
    });
    drop(dir);
    Ok(result?)
}
