//! Stored records of deployments and builds, and the pure rules over them: how a deployment
//! moves between its states and how Jenkins phases fold into one build.
//!
//! Invariants: records are not wire types (the API files render them); a deployment is
//! `started` or finished (`succeeded`/`failed`) and carries `finished_at` exactly when it is
//! finished; a build's phase never moves backwards, so a late or repeated notification cannot
//! undo a finished build.

use serde::{Deserialize, Serialize};

use crate::accounts::model::OrgId;
use crate::clock::Timestamp;
use crate::store::codec::Record;

crate::typed_id!(
    /// A deployment (`dep_…`).
    DeploymentId,
    "dep_"
);
crate::typed_id!(
    /// A build reported by Jenkins (`bld_…`).
    BuildId,
    "bld_"
);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeploymentStatus {
    Started,
    Succeeded,
    Failed,
}

impl DeploymentStatus {
    pub fn parse(text: &str) -> Option<DeploymentStatus> {
        match text {
            "started" => Some(DeploymentStatus::Started),
            "succeeded" => Some(DeploymentStatus::Succeeded),
            "failed" => Some(DeploymentStatus::Failed),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            DeploymentStatus::Started => "started",
            DeploymentStatus::Succeeded => "succeeded",
            DeploymentStatus::Failed => "failed",
        }
    }

    pub fn is_finished(self) -> bool {
        !matches!(self, DeploymentStatus::Started)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Deployment {
    pub id: DeploymentId,
    pub org_id: OrgId,
    pub service: String,
    pub environment: String,
    pub version: String,
    pub commit: Option<String>,
    pub status: DeploymentStatus,
    pub started_at: Timestamp,
    pub finished_at: Option<Timestamp>,
    pub url: Option<String>,
    pub external_id: Option<String>,
}

impl Record for Deployment {
    const KIND: &'static str = "deployment";
}

/// What a CI system reported about a deployment, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct DeploymentReport {
    pub service: String,
    pub environment: String,
    pub version: String,
    pub status: DeploymentStatus,
    pub commit: Option<String>,
    pub url: Option<String>,
    pub external_id: Option<String>,
}

/// Which lifecycle events a report causes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeploymentEvents {
    pub started: bool,
    pub finished: bool,
}

/// Folds `report` into the deployment it names (`existing`, found by `external_id`), or makes a
/// new one. A report that repeats the current status changes the fields but emits nothing, so a
/// CI job that retries its webhook does not notify twice; `started` after a finish is a re-run
/// and starts the deployment again. A deployment first reported finished (a CI job that only
/// reports at the end) emits only `deployment.finished`: nobody saw it start.
pub fn apply_report(
    existing: Option<&Deployment>,
    report: &DeploymentReport,
    new_id: DeploymentId,
    org: &OrgId,
    now: Timestamp,
) -> (Deployment, DeploymentEvents) {
    let finished = report.status.is_finished();
    let Some(current) = existing else {
        let deployment = Deployment {
            id: new_id,
            org_id: org.clone(),
            service: report.service.clone(),
            environment: report.environment.clone(),
            version: report.version.clone(),
            commit: report.commit.clone(),
            status: report.status,
            started_at: now,
            finished_at: finished.then_some(now),
            url: report.url.clone(),
            external_id: report.external_id.clone(),
        };
        let events = DeploymentEvents {
            started: !finished,
            finished,
        };
        return (deployment, events);
    };
    let mut next = current.clone();
    next.service = report.service.clone();
    next.environment = report.environment.clone();
    next.version = report.version.clone();
    next.commit = report.commit.clone().or(next.commit);
    next.url = report.url.clone().or(next.url);
    let changed = current.status != report.status;
    next.status = report.status;
    let mut events = DeploymentEvents {
        started: false,
        finished: false,
    };
    match (current.status.is_finished(), finished) {
        // The same state again, or one finish replaced by another: no second event.
        (false, false) | (true, true) => {}
        (false, true) => {
            next.finished_at = Some(now);
            events.finished = true;
        }
        (true, false) => {
            next.started_at = now;
            next.finished_at = None;
            events.started = true;
        }
    }
    if changed && current.status.is_finished() && finished {
        // failed -> succeeded (a retried step): the finish time follows the latest report.
        next.finished_at = Some(now);
    }
    (next, events)
}

/// A Jenkins build, one per job and number.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Build {
    pub id: BuildId,
    pub org_id: OrgId,
    pub job: String,
    pub number: u64,
    /// The Notification plugin's phase: QUEUED, STARTED, COMPLETED or FINALIZED.
    pub phase: String,
    /// SUCCESS, FAILURE, UNSTABLE, ABORTED, NOT_BUILT; absent while running.
    pub status: Option<String>,
    pub url: Option<String>,
    pub commit: Option<String>,
    pub branch: Option<String>,
    pub started_at: Option<Timestamp>,
    pub finished_at: Option<Timestamp>,
    pub updated_at: Timestamp,
}

impl Record for Build {
    const KIND: &'static str = "build";
}

/// The order of the plugin's phases; an unknown phase is refused by the caller.
pub fn phase_rank(phase: &str) -> Option<u8> {
    match phase {
        "QUEUED" => Some(0),
        "STARTED" => Some(1),
        "COMPLETED" => Some(2),
        "FINALIZED" => Some(3),
        _ => None,
    }
}

/// One notification of the plugin, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct BuildNotification {
    pub job: String,
    pub number: u64,
    pub phase: String,
    pub status: Option<String>,
    pub url: Option<String>,
    pub commit: Option<String>,
    pub branch: Option<String>,
}

/// Folds one notification into the build. The phase only moves forward (Jenkins sends
/// COMPLETED and FINALIZED close together, and a retried STARTED may arrive after them);
/// fields the notification leaves out keep their earlier values.
pub fn apply_notification(build: &mut Build, note: &BuildNotification, now: Timestamp) {
    let current = phase_rank(&build.phase).unwrap_or(0);
    let incoming = phase_rank(&note.phase).unwrap_or(0);
    if incoming >= current {
        build.phase = note.phase.clone();
    }
    if incoming >= 1 && build.started_at.is_none() {
        build.started_at = Some(now);
    }
    if incoming >= 2 && build.finished_at.is_none() {
        build.finished_at = Some(now);
    }
    if note.status.is_some() {
        build.status = note.status.clone();
    }
    for (slot, value) in [
        (&mut build.url, &note.url),
        (&mut build.commit, &note.commit),
        (&mut build.branch, &note.branch),
    ] {
        if value.is_some() {
            *slot = value.clone();
        }
    }
    build.updated_at = now;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(status: DeploymentStatus) -> DeploymentReport {
        DeploymentReport {
            service: "checkout".into(),
            environment: "production".into(),
            version: "1.4.2".into(),
            status,
            commit: None,
            url: None,
            external_id: Some("run-1".into()),
        }
    }

    #[test]
    fn deployment_reports_emit_start_and_finish_once() {
        use DeploymentStatus::*;
        let org = OrgId::generate();
        let at = Timestamp;
        let (started, events) = apply_report(
            None,
            &report(Started),
            DeploymentId::generate(),
            &org,
            at(1),
        );
        assert_eq!(
            events,
            DeploymentEvents {
                started: true,
                finished: false
            }
        );
        assert_eq!(started.finished_at, None);
        let (again, events) = apply_report(
            Some(&started),
            &report(Started),
            DeploymentId::generate(),
            &org,
            at(2),
        );
        assert_eq!((events.started, events.finished), (false, false));
        assert_eq!(again.id, started.id, "an upsert keeps the id");
        let (done, events) = apply_report(
            Some(&again),
            &report(Succeeded),
            DeploymentId::generate(),
            &org,
            at(3),
        );
        assert_eq!((events.started, events.finished), (false, true));
        assert_eq!((done.started_at, done.finished_at), (at(1), Some(at(3))));
        let (repeat, events) = apply_report(
            Some(&done),
            &report(Succeeded),
            DeploymentId::generate(),
            &org,
            at(4),
        );
        assert_eq!((events.started, events.finished), (false, false));
        assert_eq!(repeat.finished_at, Some(at(3)));
        let (rerun, events) = apply_report(
            Some(&repeat),
            &report(Started),
            DeploymentId::generate(),
            &org,
            at(5),
        );
        assert_eq!((events.started, events.finished), (true, false));
        assert_eq!((rerun.started_at, rerun.finished_at), (at(5), None));
    }

    #[test]
    fn a_deployment_first_seen_finished_emits_only_finished() {
        let org = OrgId::generate();
        let (deployment, events) = apply_report(
            None,
            &report(DeploymentStatus::Failed),
            DeploymentId::generate(),
            &org,
            Timestamp(9),
        );
        assert_eq!((events.started, events.finished), (false, true));
        assert_eq!(deployment.finished_at, Some(Timestamp(9)));
    }

    fn build() -> Build {
        Build {
            id: BuildId::generate(),
            org_id: OrgId::generate(),
            job: "asgard".into(),
            number: 18,
            phase: "QUEUED".into(),
            status: None,
            url: None,
            commit: None,
            branch: None,
            started_at: None,
            finished_at: None,
            updated_at: Timestamp(0),
        }
    }

    fn note(phase: &str, status: Option<&str>) -> BuildNotification {
        BuildNotification {
            job: "asgard".into(),
            number: 18,
            phase: phase.into(),
            status: status.map(str::to_string),
            url: Some("http://ci/job/asgard/18/".into()),
            commit: Some("c6d86dc".into()),
            branch: None,
        }
    }

    #[test]
    fn jenkins_phases_only_move_forward() {
        let mut build = build();
        apply_notification(&mut build, &note("STARTED", None), Timestamp(10));
        assert_eq!(build.phase, "STARTED");
        assert_eq!(build.started_at, Some(Timestamp(10)));
        apply_notification(
            &mut build,
            &note("COMPLETED", Some("SUCCESS")),
            Timestamp(20),
        );
        apply_notification(
            &mut build,
            &note("FINALIZED", Some("SUCCESS")),
            Timestamp(21),
        );
        // A retried STARTED arriving late does not reopen the build.
        apply_notification(&mut build, &note("STARTED", None), Timestamp(30));
        assert_eq!(build.phase, "FINALIZED");
        assert_eq!(build.status.as_deref(), Some("SUCCESS"));
        assert_eq!(
            (build.started_at, build.finished_at),
            (Some(Timestamp(10)), Some(Timestamp(20)))
        );
        assert_eq!(build.commit.as_deref(), Some("c6d86dc"));
    }

    #[test]
    fn phases_parse() {
        assert_eq!(phase_rank("FINALIZED"), Some(3));
        assert_eq!(phase_rank("finished"), None);
    }
}
