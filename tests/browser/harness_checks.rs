//! The harness fails tests the way it promises: a look-up that times out says what it looked
//! for, where, what the page showed, and leaves a screenshot; an accessibility violation is
//! named with its rule and element. Each check provokes the failure on a real page.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Duration;

use crate::page::{Page, Query};
use crate::support::server_with_owner;

/// Runs `action` and returns the message it panicked with.
fn panic_message(action: impl FnOnce()) -> String {
    let Err(payload) = catch_unwind(AssertUnwindSafe(action)) else {
        panic!("expected a failure, and the action succeeded");
    };
    match (
        payload.downcast_ref::<String>(),
        payload.downcast_ref::<&str>(),
    ) {
        (Some(message), _) => message.clone(),
        (None, Some(message)) => message.to_string(),
        (None, None) => String::from("(no message)"),
    }
}

#[test]
fn a_timed_out_look_up_shows_the_query_the_page_and_a_screenshot() {
    let server = server_with_owner();
    let mut page = Page::open(&server);
    page.goto("/login");
    page.wait(&Query::heading(1, "Sign in"));
    page.set_deadline(Duration::from_millis(300));

    let message = panic_message(|| page.click_role("button", "Launch the rockets"));
    assert!(
        message.contains("the button named \"Launch the rockets\""),
        "{message}"
    );
    assert!(message.contains("nothing matches"), "{message}");
    assert!(message.contains(&server.url("/login")), "{message}");
    assert!(
        message.contains("visible text: Lookout Sign in E-mail"),
        "{message}"
    );
    let shot = message
        .split("screenshot: ")
        .nth(1)
        .expect("a screenshot path")
        .trim();
    assert!(std::fs::metadata(shot).is_ok_and(|m| m.len() > 0), "{shot}");

    // Two elements answering one description are a failure too, not a guess.
    page.eval("document.querySelector('form').append(Object.assign(document.createElement('button'), { textContent: 'Sign in' })), true");
    let message = panic_message(|| page.click_role("button", "Sign in"));
    assert!(message.contains("2 elements match"), "{message}");
}

#[test]
fn an_accessibility_violation_names_its_rule_and_element() {
    let server = server_with_owner();
    let page = Page::open(&server);
    page.goto("/login");
    page.wait(&Query::heading(1, "Sign in"));
    page.check_accessibility();

    page.eval("document.querySelector('main').append(Object.assign(document.createElement('img'), { src: '/assets/icon.svg', id: 'no-alt' })), true");
    let message = panic_message(|| page.check_accessibility());
    assert!(message.contains("image-alt"), "{message}");
    assert!(message.contains("#no-alt"), "{message}");
}
