//! OpenID Connect sign-in through the `openidconnect` crate: the authorization code flow with
//! PKCE against each organisation's provider (`flow.rs`), the attempt cookie (`attempt.rs`),
//! the crate's types and Lookout's added claim rules (`claims.rs`), the discovery and key-set
//! cache (`provider.rs`), and the routes (`api.rs`).

pub mod api;
pub mod attempt;
pub mod claims;
pub mod flow;
pub mod provider;

/// Where providers send the browser back (the redirect URI to register with them).
pub const CALLBACK_PATH: &str = "/api/v1/auth/sso/oidc/callback";
