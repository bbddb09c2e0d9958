//! `lookout org create|list|set-plan`.

use clap::Subcommand;

use super::target::run_admin;
use super::user::text;
use crate::accounts::model::Plan;
use crate::admin::AdminRequest;
use crate::config::Config;

#[derive(Debug, Subcommand)]
pub enum OrgCommand {
    /// Create an organisation
    Create {
        name: String,
        #[arg(long)]
        json: bool,
    },
    /// List organisations with their plan and member count
    List {
        #[arg(long)]
        json: bool,
    },
    /// Set an organisation's plan (free or enterprise)
    SetPlan {
        /// Organisation name or id
        org: String,
        plan: Plan,
        #[arg(long)]
        json: bool,
    },
}

pub fn run(config: &Config, command: OrgCommand) -> anyhow::Result<()> {
    super::init_quiet_logging();
    let (request, json, holder) = match command {
        OrgCommand::Create { name, json } => (AdminRequest::OrgCreate { name }, json, "org create"),
        OrgCommand::List { json } => (AdminRequest::OrgList, json, "org list"),
        OrgCommand::SetPlan { org, plan, json } => {
            (AdminRequest::OrgSetPlan { org, plan }, json, "org set-plan")
        }
    };
    let listing = matches!(request, AdminRequest::OrgList);
    let result = run_admin(&config.data_dir, request, holder)?;
    if json {
        println!("{result}");
    } else if listing {
        for org in result["items"].as_array().into_iter().flatten() {
            println!(
                "{}  {}  {}  {} members",
                text(&org["id"]),
                text(&org["name"]),
                text(&org["plan"]),
                text(&org["members"])
            );
        }
    } else {
        println!(
            "{}  {}  {}",
            text(&result["id"]),
            text(&result["name"]),
            text(&result["plan"])
        );
    }
    Ok(())
}
