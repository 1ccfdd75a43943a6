"""The page at / in a real headless Chromium (Debian's chromium + chromium-driver, driven by Selenium).

No browser is downloaded: the Debian binaries are used as they are. Without them these tests FAIL
(CI installs them: apt-get install -y chromium chromium-driver), they never skip.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import httpx
import pytest
from http_server import http_server

import kenning

pytestmark = pytest.mark.slow

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-extensions",
         "--window-size=1280,1000"]
WAIT = 20


@pytest.fixture(scope="module")
def browser():
    for binary in (CHROMIUM, CHROMEDRIVER):
        if not Path(binary).exists() and not shutil.which(Path(binary).name):
            pytest.fail(f"{binary} is missing: apt-get install -y chromium chromium-driver")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS:
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


@pytest.fixture
def site(tmp_path):
    """A store with two memories, served by a real `kenning serve --http` process."""
    path = tmp_path / "store"
    store = kenning.open_store(path)
    store.configure(default_mode="bm25")
    ids = [store.write("The auth service listens on port 8443", scopes=["projects:auth"]).id,
           store.write("The billing job runs nightly at 02:00 UTC", scopes=["projects:billing"]).id]
    store.close()
    with http_server(path) as base:
        yield base, path, ids


def _wait(driver, condition):
    """Wait for ``condition``; an element lost to a page reload mid-check (chromium reports it as a stale
    element or as a node that left the document) is looked up again until the wait times out."""
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, WAIT, ignored_exceptions=(WebDriverException,)).until(condition)


def _by(css):
    from selenium.webdriver.common.by import By

    return (By.CSS_SELECTOR, css)


def _message(driver, expected: str) -> str:
    """The page's message line once it says ``expected`` (fails with what it said instead)."""
    from selenium.common.exceptions import TimeoutException

    box = driver.find_element(*_by("#message"))
    try:
        _wait(driver, lambda d: box.is_displayed() and expected in box.text)
    except TimeoutException:
        raise AssertionError(f"the page said {box.text!r}, not {expected!r}") from None
    return box.text


def _search(driver, base, words):
    driver.get(base + "/")
    box = driver.find_element(*_by("#q"))
    box.clear()
    box.send_keys(words)
    driver.find_element(*_by("#search-button")).click()
    _wait(driver, lambda d: "q=" in d.current_url)
    return driver.find_elements(*_by("#hits .hit"))


def test_search_open_edit_then_search_shows_the_new_text(browser, site):
    base, _, (auth, _) = site
    hits = _search(browser, base, "auth port")
    assert [h.get_attribute("data-id") for h in hits] == [auth]
    badges = hits[0].find_element(*_by(".badges")).text
    assert "lexical" in badges and "high" in badges and "fresh" in badges  # matched_leg, relevance, staleness

    hits[0].find_element(*_by("a.open")).click()
    _wait(browser, lambda d: f"/ui/memories/{auth}" in d.current_url)
    assert browser.find_element(*_by("#memory-body")).text == "The auth service listens on port 8443"
    editor = browser.find_element(*_by("#edit-text"))
    editor.clear()
    editor.send_keys("The auth service listens on port 9443 since the migration")
    browser.find_element(*_by("#save-button")).click()
    _wait(browser, lambda d: "9443" in d.find_element(*_by("#memory-body")).text)

    hits = _search(browser, base, "9443 migration")
    assert [h.get_attribute("data-id") for h in hits] == [auth]
    assert "port 9443 since the migration" in hits[0].text
    assert _search(browser, base, "8443") == []


def test_saving_an_edit_keeps_a_scope_whose_name_holds_a_comma(browser, tmp_path):
    """The edit form shows the scopes comma-separated; a scope's name may hold a comma ("team:a,b"), so
    saving only the text must not split it into two scopes ("team:a" and "b")."""
    path = tmp_path / "store"
    with kenning.open_store(path) as store:
        store.configure(default_mode="bm25")
        memory = store.write("Deploys use the blue green switch on the staging cluster", scopes=["team:a,b", "ops"]).id
    with http_server(path) as base:
        browser.get(f"{base}/ui/memories/{memory}")
        editor = browser.find_element(*_by("#edit-text"))
        editor.clear()
        editor.send_keys("Deploys use the blue green switch on the production cluster")
        browser.find_element(*_by("#save-button")).click()
        _wait(browser, lambda d: "production" in d.find_element(*_by("#memory-body")).text)
        with kenning.open_store(path) as store:
            assert store.get(memory).scopes == ["team:a,b", "ops"]

        scopes = browser.find_element(*_by("#edit-scopes"))  # a scope changed on purpose is still taken
        scopes.clear()
        scopes.send_keys("ops, infra")
        browser.find_element(*_by("#save-button")).click()
        _wait(browser, lambda d: d.find_element(*_by("#edit-scopes")).get_attribute("value") == "ops, infra")
        with kenning.open_store(path) as store:
            assert store.get(memory).scopes == ["ops", "infra"]


def test_an_edit_or_verification_of_a_memory_changed_since_the_page_showed_it_is_refused(browser, site):
    """The page sends the version it showed: when another agent changed the memory meanwhile, saving
    the text typed over the old one (or marking the old one verified) is refused and nothing is written."""
    base, path, (auth, _) = site
    browser.get(f"{base}/ui/memories/{auth}")
    with kenning.open_store(path) as store:  # another agent, while the page is open
        store.update(auth, text="The auth service listens on port 9443 since the migration")
    browser.find_element(*_by("#verify-note")).send_keys("checked the config")
    browser.find_element(*_by("#verify-button")).click()
    _message(browser, "changed")
    editor = browser.find_element(*_by("#edit-text"))
    editor.clear()
    editor.send_keys("The auth service listens on port 8443 behind the proxy")
    browser.find_element(*_by("#save-button")).click()
    _message(browser, "changed")
    with kenning.open_store(path) as store:
        assert store.get(auth).content == "The auth service listens on port 9443 since the migration"
        assert store.show(auth)["last_verified_at"] is None

    browser.get(f"{base}/ui/memories/{auth}")  # shown again, at its new version: the save goes through
    editor = browser.find_element(*_by("#edit-text"))
    editor.clear()
    editor.send_keys("The auth service listens on port 9443 behind the proxy")
    browser.find_element(*_by("#save-button")).click()
    _wait(browser, lambda d: "behind the proxy" in d.find_element(*_by("#memory-body")).text)


def test_turning_writes_off_makes_a_write_from_the_page_fail_with_the_reason(browser, site):
    base, path, (auth, _) = site
    browser.get(base + "/")
    toggle = browser.find_element(*_by("#setting-write_enabled"))
    assert toggle.is_selected()
    toggle.click()
    _message(browser, "write_enabled is now false")
    assert httpx.get(f"{base}/config").json()["write_enabled"] is False

    browser.get(base + "/")  # the checkbox shows the stored setting
    assert not browser.find_element(*_by("#setting-write_enabled")).is_selected()
    browser.find_element(*_by("#write-content")).send_keys("The cache is Redis on port 6379")
    browser.find_element(*_by("#write-scopes")).send_keys("projects:cache")
    browser.find_element(*_by("#write-button")).click()
    assert "write_enabled true" in _message(browser, "writes are disabled")

    browser.get(f"{base}/ui/memories/{auth}")
    editor = browser.find_element(*_by("#edit-text"))
    editor.clear()
    editor.send_keys("The auth service listens on port 1")
    browser.find_element(*_by("#save-button")).click()
    _message(browser, "writes are disabled")
    with kenning.open_store(path) as store:
        assert store.count() == 2 and store.get(auth).content == "The auth service listens on port 8443"

    browser.get(base + "/")
    browser.find_element(*_by("#setting-write_enabled")).click()
    _message(browser, "write_enabled is now true")
    browser.find_element(*_by("#write-content")).send_keys("The cache is Redis on port 6379")
    browser.find_element(*_by("#write-scopes")).send_keys("projects:cache")
    browser.find_element(*_by("#write-button")).click()
    _message(browser, "Written")
    with kenning.open_store(path) as store:
        assert store.count() == 3


def test_remove_then_tombstones_then_restore(browser, site):
    base, _, (auth, billing) = site
    browser.get(f"{base}/ui/memories/{billing}")
    browser.find_element(*_by("#remove-reason")).send_keys("the job moved to the new scheduler")
    browser.find_element(*_by("#remove-button")).click()
    _wait(browser, lambda d: d.current_url.endswith("/ui/tombstones"))
    rows = browser.find_elements(*_by("#tombstones .tombstone"))
    assert [r.get_attribute("data-id") for r in rows] == [billing]
    assert "the job moved to the new scheduler" in rows[0].text
    assert _search(browser, base, "billing nightly") == []

    browser.get(f"{base}/ui/tombstones")
    browser.find_element(*_by(f'button[data-action="restore"][data-id="{billing}"]')).click()
    _wait(browser, lambda d: d.find_elements(*_by("#no-tombstones")))
    assert [h.get_attribute("data-id") for h in _search(browser, base, "billing nightly")] == [billing]


def test_pending_writes_are_confirmed_and_cancelled_from_the_page(browser, site):
    base, path, _ = site
    browser.get(base + "/")
    browser.find_element(*_by("#setting-require_write_confirmation")).click()
    _message(browser, "require_write_confirmation is now true")
    for text in ("The queue is RabbitMQ on port 5672", "The cache is Redis on port 6379"):
        browser.get(base + "/")
        browser.find_element(*_by("#write-content")).send_keys(text)
        browser.find_element(*_by("#write-scopes")).send_keys("infra")
        browser.find_element(*_by("#write-button")).click()
        _message(browser, "Staged for confirmation")

    browser.get(f"{base}/ui/pending")
    rows = {r.find_element(*_by(".summary")).text: r.get_attribute("data-id")
            for r in browser.find_elements(*_by("#pending .pending"))}
    assert set(rows) == {"The queue is RabbitMQ on port 5672", "The cache is Redis on port 6379"}
    browser.find_element(*_by(f'button[data-action="confirm"][data-id="{rows["The queue is RabbitMQ on port 5672"]}"]')).click()
    _wait(browser, lambda d: len(d.find_elements(*_by("#pending .pending"))) == 1)
    browser.find_element(*_by('button[data-action="cancel"]')).click()
    _wait(browser, lambda d: d.find_elements(*_by("#no-pending")))
    with kenning.open_store(path) as store:
        assert sorted(m.content for m in store.list(auto_scope=False)) == [
            "The auth service listens on port 8443", "The billing job runs nightly at 02:00 UTC",
            "The queue is RabbitMQ on port 5672"]


def test_health_page_lists_never_verified_memories(browser, site):
    base, _, (auth, billing) = site
    browser.get(f"{base}/ui/health")
    listed = browser.find_element(*_by("#never-verified")).text
    assert "The auth service listens on port 8443" in listed and "billing job" in listed
