//! `lookout user create|list`, and the operator's recovery of one account:
//! `reset-password|reset-2fa|unlock|disable` (docs/cli.md).

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
    /// Set a new password (first line of standard input); the user's sessions end
    ResetPassword {
        #[arg(long)]
        email: String,
        /// Read the password from the first line of standard input
        #[arg(long)]
        password_stdin: bool,
        #[arg(long)]
        json: bool,
    },
    /// Remove the user's second factor; the user's sessions end
    #[command(name = "reset-2fa")]
    ResetTwoFactor {
        #[arg(long)]
        email: String,
        #[arg(long)]
        json: bool,
    },
    /// Lift the lock that failed sign-ins put on the account
    Unlock {
        #[arg(long)]
        email: String,
        #[arg(long)]
        json: bool,
    },
    /// Disable the account: no sign-in, sessions ended, API keys revoked
    Disable {
        #[arg(long)]
        email: String,
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
        UserCommand::ResetPassword {
            email,
            password_stdin,
            json,
        } => {
            if !password_stdin {
                bail!("pass the new password on standard input with --password-stdin");
            }
            let password = read_password()?;
            let request = AdminRequest::UserResetPassword { email, password };
            recover(
                config,
                request,
                "user reset-password",
                "password reset",
                json,
            )?;
        }
        UserCommand::ResetTwoFactor { email, json } => {
            let request = AdminRequest::UserResetTwoFactor { email };
            recover(
                config,
                request,
                "user reset-2fa",
                "second factor reset",
                json,
            )?;
        }
        UserCommand::Unlock { email, json } => {
            let request = AdminRequest::UserUnlock { email };
            recover(config, request, "user unlock", "unlocked", json)?;
        }
        UserCommand::Disable { email, json } => {
            let request = AdminRequest::UserDisable { email };
            recover(config, request, "user disable", "disabled", json)?;
        }
    }
    Ok(())
}

/// Runs one recovery command and prints what it did.
fn recover(
    config: &Config,
    request: AdminRequest,
    holder: &str,
    done: &str,
    json: bool,
) -> anyhow::Result<()> {
    let result = run_admin(&config.data_dir, request, holder)?;
    if json {
        println!("{result}");
        return Ok(());
    }
    let sessions = if result["sessions_ended"] == true {
        "; every session ended"
    } else {
        ""
    };
    println!(
        "{done}: {} <{}>{sessions}",
        text(&result["user"]["id"]),
        text(&result["user"]["email"]),
    );
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
