"""User-claims gate: a statement about the user filed as anything but user-inference is refused;
software prose about an application's users passes."""

from __future__ import annotations

import pytest

from kenning.memory.gates import run_content_gates, user_claims


@pytest.mark.parametrize(
    "text",
    [
        "The user prefers tabs over spaces.",
        "the user likes short answers with code first",
        "User likes terse commit messages.",
        "Notes from onboarding. User prefers pnpm over npm.",
        "- user hates emoji in commit messages",
        "The user's favourite editor is Helix.",
        "The user would rather get a failing test than a silent fallback.",
        "The user doesn't like long explanations.",
        "The user works at a bioinformatics lab.",
        "The user is an expert in Rust.",
        "You prefer dark themes.",
        "You're a data engineer working mostly in SQL.",
        "You work as a nurse and code on weekends.",
        "I (the user) am colour-blind, so avoid red/green charts.",
        "I, the user, maintain the release scripts.",
        "As the user, I want answers in British English.",
    ],
)
def test_claims_about_the_user_filed_as_fact_are_refused(text):
    refusal = user_claims.check(text, "fact")
    assert refusal is not None, text
    assert refusal.gate == "user_claims" and refusal.status == "user_claim_warning"
    assert refusal.override == "acknowledge_user_claim"
    assert "user-inference" in refusal.hint


@pytest.mark.parametrize(
    "text",
    [
        "The user table has a unique index on email.",
        "The user-facing API returns 404 for unknown ids.",
        "The user is redirected to /login when the session expires.",
        "The user has to confirm the e-mail address before the first login.",
        "The user never sees the raw token; it is stored hashed.",
        "If the user prefers reduced motion, animations are disabled.",
        "When the user likes a post, a notification is queued.",
        "Users prefer the keyboard shortcuts over the menu (survey 2024).",
        "Alice prefers tabs; Bob prefers spaces.",
        "The admin user's favourite_color column is nullable.",
        "If you prefer speed over recall, use bm25 mode.",
        "You can prefer IPv4 with --ipv4.",
        "user_prefers_dark is read from the settings table.",
        "The userland tools like strace need CAP_SYS_PTRACE.",
        "Run the migration; you never need to call flush() yourself.",
    ],
)
def test_software_prose_about_users_passes(text):
    assert user_claims.find_user_claims(text) == [], text
    assert user_claims.check(text, "fact") is None


def test_user_inference_category_is_the_remedy():
    assert user_claims.check("The user prefers tabs.", "user-inference") is None


def test_other_categories_are_gated_too():
    # ambient context about the user still needs the user's veto
    assert user_claims.check("The user prefers tabs.", "ambient").gate == "user_claims"


def test_acknowledge_user_claim_overrides():
    assert user_claims.check("The user prefers tabs.", "fact", acknowledge_user_claim=True) is None
    assert run_content_gates("The user prefers tabs.", "fact", acknowledge_user_claim=True) is None


def test_refusal_quotes_what_matched():
    refusal = run_content_gates("Context first. The user prefers tabs.", "fact")
    assert refusal.matched == ["the user …: 'The user prefers'"]
    assert "'fact'" in refusal.reason
    assert refusal.reason == "the text reads as a claim about the user but is filed as 'fact'"
    assert refusal.hint == ("Re-issue the write with category='user-inference' so the user can confirm it; if the "
                            "subject is someone else (an application's users, a colleague), pass "
                            "acknowledge_user_claim=True.")
