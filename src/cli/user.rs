//! `lookout user create|list`.

use std::io::BufRead;

use anyhow::{Context, bail};
use clap::Subcommand;
use serde_json::Value;

use super::target::run_admin;
use crate::accounts::model::Role;
use crate::admin::AdminRequest;
use crate::config::Config;

#[derive(Debug, Subcommand)]
pub enum UserCommand {
    /// Add a user to an organisation (created when missing)
    Create {
        #[arg(long)]
        email: String,
        /// Read the password from the first line of standard input
        #[arg(long)]
        password_stdin: bool,
        /// owner, admin, member or viewer
        #[arg(long)]
        role: Role,
        /// Organisation name (default: "default")
        #[arg(long)]
        org: Option<String>,
        /// Print the result as JSON
        #[arg(long)]
        json: bool,
    },
    /// List users and their organisations
    List {
        #[arg(long)]
        json: bool,
    },
}

pub fn run(config: &Config, command: UserCommand) -> anyhow::Result<()> {
    super::init_quiet_logging();
    match command {
        UserCommand::Create {
            email,
            password_stdin,
            role,
            org,
            json,
        } => {
            if !password_stdin {
                bail!("pass the password on standard input with --password-stdin");
            }
            let password = read_password()?;
            let request = AdminRequest::UserCreate {
                email,
                password,
                role,
                org,
            };
            let result = run_admin(&config.data_dir, request, "user create")?;
            if json {
                println!("{result}");
            } else {
                println!(
                    "created user {} <{}>, {} of organisation {:?} ({})",
                    text(&result["user"]["id"]),
                    text(&result["user"]["email"]),
                    text(&result["role"]),
                    text(&result["org"]["name"]),
                    text(&result["org"]["id"]),
                );
            }
        }
        UserCommand::List { json } => {
            let result = run_admin(&config.data_dir, AdminRequest::UserList, "user list")?;
            if json {
                println!("{result}");
            } else {
                for user in result["items"].as_array().into_iter().flatten() {
                    let memberships: Vec<String> = user["memberships"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|m| format!("{} ({})", text(&m["org_name"]), text(&m["role"])))
                        .collect();
                    println!(
                        "{}  {}  {}",
                        text(&user["id"]),
                        text(&user["email"]),
                        memberships.join(", ")
                    );
                }
            }
        }
    }
    Ok(())
}

fn read_password() -> anyhow::Result<String> {
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .context("cannot read the password from standard input")?;
    let password = line.strip_suffix('\n').unwrap_or(&line);
    let password = password.strip_suffix('\r').unwrap_or(password);
    if password.is_empty() {
        bail!("no password on standard input");
    }
    Ok(password.to_string())
}

pub(super) fn text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}
