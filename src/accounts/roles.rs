//! Who may manage whom in an organisation (CONTRACT.md section 2, "roles" and "members"):
//! pure rules, no storage, so every pair of roles is unit-tested here.
//!
//! Invariants: admins manage members and viewers only — both the target's current role and the
//! role it would get must be `member` or `viewer`; owners manage everyone; an organisation
//! never loses its last owner (neither by removal nor by demotion). Permission is judged
//! before the last-owner rule, so an admin touching an owner hears "forbidden", not a hint
//! about how many owners there are. Credentials (password, second factor, sessions) of an
//! account are an org's business only while the account belongs to that org alone and has
//! joined it; otherwise only the operator changes them, from the command line.

use super::model::Role;

/// What an admin or owner wants to do to an existing member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemberChange {
    /// Give the member another role (or the same one).
    SetRole(Role),
    Remove,
    /// Remove the member's second factor so they can enrol again.
    ResetTwoFactor,
}

/// Why a change is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The actor's role is too low for the target's role or for the role asked for.
    #[error("{0}")]
    Forbidden(String),
    /// The change would leave the organisation without an owner.
    #[error(
        "the organisation's last owner cannot be removed or demoted; make someone else owner first"
    )]
    LastOwner,
}

/// Whether `actor` may manage people who hold (or would hold) `role`.
pub fn manages(actor: Role, role: Role) -> bool {
    match actor {
        Role::Owner => true,
        Role::Admin => matches!(role, Role::Member | Role::Viewer),
        Role::Member | Role::Viewer => false,
    }
}

fn forbidden(actor: Role, role: Role) -> Refusal {
    let detail = match actor {
        Role::Owner => "owners manage everyone".to_string(),
        Role::Admin => format!(
            "admins manage members and viewers only; managing an {} needs the owner role",
            role.as_str()
        ),
        Role::Member | Role::Viewer => "managing members needs the admin role or higher".into(),
    };
    Refusal::Forbidden(detail)
}

/// Whether `actor` may add someone to the organisation with `role`.
pub fn check_grant(actor: Role, role: Role) -> Result<(), Refusal> {
    if manages(actor, role) {
        Ok(())
    } else {
        Err(forbidden(actor, role))
    }
}

/// Whether `actor` may apply `change` to a member whose role is `current`, in an organisation
/// that has `owners` owners (the target included when it is one).
pub fn check_change(
    actor: Role,
    current: Role,
    change: MemberChange,
    owners: usize,
) -> Result<(), Refusal> {
    if !manages(actor, current) {
        return Err(forbidden(actor, current));
    }
    if let MemberChange::SetRole(new) = change
        && !manages(actor, new)
    {
        return Err(forbidden(actor, new));
    }
    let loses_owner = match change {
        MemberChange::SetRole(new) => new != Role::Owner,
        MemberChange::Remove => true,
        MemberChange::ResetTwoFactor => false,
    };
    if current == Role::Owner && loses_owner && owners <= 1 {
        return Err(Refusal::LastOwner);
    }
    Ok(())
}

/// Whether an org's admins may change the credentials of one of its members: not of an
/// account that has not joined yet (`invited`), nor of one that also belongs to
/// `other_orgs` other organisations, whose owners rely on the same password and second factor.
pub fn check_credential_change(invited: bool, other_orgs: usize) -> Result<(), Refusal> {
    if invited || other_orgs > 0 {
        return Err(Refusal::Forbidden(
            "this account has not joined yet or also belongs to another organisation: only the \
             operator can change its credentials, from the command line (lookout user \
             reset-password, reset-2fa, unlock, disable)"
                .into(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use Role::{Admin, Member, Owner, Viewer};

    fn allowed(result: Result<(), Refusal>) -> bool {
        match result {
            Ok(()) => true,
            Err(Refusal::Forbidden(_)) => false,
            Err(Refusal::LastOwner) => panic!("unexpected last_owner"),
        }
    }

    #[test]
    fn owners_manage_everyone_and_admins_only_members_and_viewers() {
        for current in Role::ALL {
            for new in Role::ALL {
                // Two owners, so the last-owner rule stays out of the way.
                let change = MemberChange::SetRole(new);
                assert!(
                    allowed(check_change(Owner, current, change, 2)),
                    "owner {current:?}->{new:?}"
                );
                let admin_may =
                    matches!(current, Member | Viewer) && matches!(new, Member | Viewer);
                assert_eq!(
                    allowed(check_change(Admin, current, change, 2)),
                    admin_may,
                    "admin {current:?}->{new:?}"
                );
                for low in [Member, Viewer] {
                    assert!(!allowed(check_change(low, current, change, 2)));
                }
            }
            assert!(allowed(check_change(
                Owner,
                current,
                MemberChange::Remove,
                2
            )));
            assert_eq!(
                allowed(check_change(Admin, current, MemberChange::Remove, 2)),
                matches!(current, Member | Viewer),
                "admin removes {current:?}"
            );
            assert_eq!(
                allowed(check_change(
                    Admin,
                    current,
                    MemberChange::ResetTwoFactor,
                    2
                )),
                matches!(current, Member | Viewer),
                "admin resets 2fa of {current:?}"
            );
        }
    }

    #[test]
    fn granting_follows_the_same_rule() {
        for role in Role::ALL {
            assert!(check_grant(Owner, role).is_ok());
            assert_eq!(
                check_grant(Admin, role).is_ok(),
                matches!(role, Member | Viewer)
            );
            assert!(check_grant(Member, role).is_err());
            assert!(check_grant(Viewer, role).is_err());
        }
    }

    #[test]
    fn the_last_owner_stays() {
        let last = |change| check_change(Owner, Owner, change, 1);
        for new in [Admin, Member, Viewer] {
            assert_eq!(last(MemberChange::SetRole(new)), Err(Refusal::LastOwner));
        }
        assert_eq!(last(MemberChange::Remove), Err(Refusal::LastOwner));
        // Keeping the role, or resetting the second factor, keeps the owner.
        assert_eq!(last(MemberChange::SetRole(Owner)), Ok(()));
        assert_eq!(last(MemberChange::ResetTwoFactor), Ok(()));
        // With a second owner the first may go.
        assert_eq!(check_change(Owner, Owner, MemberChange::Remove, 2), Ok(()));
    }

    #[test]
    fn credentials_are_changed_only_for_joined_members_of_one_org() {
        assert_eq!(check_credential_change(false, 0), Ok(()));
        for (invited, other_orgs) in [(true, 0), (false, 1), (true, 2)] {
            let refusal = check_credential_change(invited, other_orgs).unwrap_err();
            assert!(refusal.to_string().contains("operator"), "{refusal}");
        }
    }

    #[test]
    fn permission_is_judged_before_the_last_owner() {
        assert!(matches!(
            check_change(Admin, Owner, MemberChange::Remove, 1),
            Err(Refusal::Forbidden(_))
        ));
    }
}
