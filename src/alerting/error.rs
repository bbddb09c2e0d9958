//! `AlertingError`: the conditions alerting's transactions, db and model code report. Write and
//! read closures return it, so a refusal inside a transaction rolls the transaction back.
//!
//! Invariant: it knows nothing of HTTP; `api.rs` alone turns each variant into its problem
//! answer, with an exhaustive `match`, so a new variant cannot go out unmapped.

use crate::store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum AlertingError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// No such record (`what`: "alert", "incident", "alert rule") in the caller's organisation.
    #[error("{0} not found")]
    NotFound(&'static str),
    /// A rule as requested is not a valid rule; the text names the field.
    #[error("{0}")]
    InvalidRule(String),
    /// A rule names a channel its organisation does not have.
    #[error("channels: no channel {0} in this organisation")]
    UnknownChannel(String),
    /// The organisation has the most rules it may have.
    #[error("an organisation has at most {0} alert rules")]
    RuleLimit(usize),
    /// An incident's timeline holds the most entries it may hold.
    #[error("the incident's timeline is full ({0} entries)")]
    TimelineFull(usize),
}
