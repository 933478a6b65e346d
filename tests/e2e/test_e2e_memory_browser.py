"""The memory browser in a real browser (Debian's Chromium, driven by Selenium), on the local stack's
`/ui/` (client/README.md "Memory browser"): a user with dated records, the `as_of` slider bringing
the superseded record back, a query and a context block, forgetting an episode taking what it taught
with it, hostile content shown as text, and the tabs reachable from the keyboard.

`make test` installs Chromium and ChromeDriver and sets HIPPOCAMPUS_REQUIRE_BROWSER=1, so there the
test fails rather than skips without them. Screenshots of the main views go to build/ui-screenshots/
(or $HIPPOCAMPUS_SCREENSHOTS).
"""

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e_support import ROOT, Api, structured_reply

from tests.support.waiting import wait_for

pytestmark = pytest.mark.e2e

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"  # Debian's packages put them on PATH
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
SHOTS = Path(os.environ.get("HIPPOCAMPUS_SCREENSHOTS", ROOT / "build" / "ui-screenshots"))  # noqa: TID251 - a test setting
WAIT_S = 60
HOSTILE_TURN = (
    'I moved to Berlin. <script>window.__pwned = "turn"</script> <img src=x onerror="window.__pwned=1">'
)
HOSTILE_RECORD = 'Ana lives in Berlin <img src=x onerror="window.__pwned=2">'


def ui_reply(body: dict[str, Any]) -> str:
    """Paris first; then the move, a record with hostile text that invalidates the Paris record."""
    return structured_reply(body, moved=HOSTILE_RECORD)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not (Path(CHROMIUM).is_file() and Path(CHROMEDRIVER).is_file()):
        if os.environ.get("HIPPOCAMPUS_REQUIRE_BROWSER") == "1":  # noqa: TID251 - set by make test
            pytest.fail(f"{CHROMIUM} and {CHROMEDRIVER} are needed: `make test` installs them (README)")
        pytest.skip("Chromium and ChromeDriver are not installed (make test installs them)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    os.environ["SE_OFFLINE"] = "true"  # noqa: TID251 - Selenium Manager never downloads a browser or a driver
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    # The closed network refuses Chromium's own background connections: switch them off.
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1280,1000",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    try:
        yield driver
    finally:
        driver.quit()


def wait_until(driver: Any, condition: Any, what: str) -> Any:
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    status = lambda: driver.find_element("id", "status").text  # noqa: E731 - read on failure only
    # A list the page re-renders between finding a node and reading its text leaves a stale node:
    # the next poll reads the new one.
    waiting = WebDriverWait(
        driver, WAIT_S, poll_frequency=0.1, ignored_exceptions=(StaleElementReferenceException,)
    )
    try:
        return waiting.until(condition)
    except Exception as error:
        raise AssertionError(f"waited up to {WAIT_S} s for {what}; the page says: {status()!r}") from error


def texts(driver: Any, selector: str) -> list[str]:
    return [node.text for node in driver.find_elements("css selector", selector)]


def shot(driver: Any, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(SHOTS / f"{name}.png"))


def test_the_browser_shows_records_over_time_queries_and_forgets_an_episode(
    browser: Any, llm: Any, api: Api, tenant: str
) -> None:
    from selenium.webdriver.common.keys import Keys

    user = "ana"
    llm.set_reply(ui_reply)
    first = {
        "id": "t1",
        "text": "I live in Paris.",
        "occurred_at": "2023-05-08T10:00:00Z",
        "user_name": "Ana",
    }
    api.wait_completed(tenant, api.ingest(tenant, user, [first]))
    second = {"id": "t2", "text": HOSTILE_TURN, "occurred_at": "2024-03-01T10:00:00Z", "user_name": "Ana"}
    api.wait_completed(tenant, api.ingest(tenant, user, [second]))
    history = api.memory_path(tenant, user) + "/history"  # archived just after the version is written
    wait_for(
        lambda: len(api.request("GET", history).json()["versions"]) == 2 or None,
        what="both versions archived",
    )

    driver = browser
    driver.get(f"{api.base_url}/ui/?tenant={tenant}")
    user_button = wait_until(
        driver,
        lambda d: next(iter(d.find_elements("css selector", f'#users button[data-user="{user}"]')), None),
        "the tenant's users to list the user",
    )
    user_button.click()
    driver.find_element("id", "tab-records").click()  # a hidden panel's text reads as empty
    wait_until(driver, lambda d: texts(d, "#records .record-text") == [HOSTILE_RECORD], "the current record")
    assert "Ana lives in Paris." in texts(driver, "#timeline .record-text")  # kept, superseded
    shot(driver, "records-now")

    # The slider's first stop is the earliest record's start: Paris is true again, not yet Berlin.
    driver.find_element("id", "as-of").send_keys(Keys.HOME)
    wait_until(
        driver, lambda d: texts(d, "#records .record-text") == ["Ana lives in Paris."], "Paris as of then"
    )
    assert driver.find_element("id", "records-heading").text == "Records true on 2023-05-08"
    assert "superseded by" in driver.find_element("css selector", "#records li .meta").text
    shot(driver, "records-as-of")

    driver.find_element("id", "tab-summary").click()  # two versions: what changed between them
    wait_until(driver, lambda d: len(d.find_elements("css selector", "#versions li")) == 2, "both versions")
    driver.find_element("css selector", "#diff-form button[type=submit]").click()
    assert any("Paris." in text for text in texts(driver, "#diff del"))
    assert any("Berlin." in text for text in texts(driver, "#diff ins"))
    driver.find_element("id", "tab-jobs").click()
    jobs = [["t2", "completed"], ["t1", "completed"]]
    wait_until(driver, lambda d: [row.split()[2:4] for row in texts(d, "#jobs tr")] == jobs, "the jobs")
    shot(driver, "summary-and-jobs")

    driver.find_element("id", "tab-playground").click()
    driver.find_element("id", "query").send_keys("Where does Ana live?")
    driver.find_element("css selector", "#query-form button[type=submit]").click()
    wait_until(driver, lambda d: d.find_elements("css selector", "#results .result"), "ranked results")
    assert all(score.startswith("score ") for score in texts(driver, "#results .score"))
    driver.find_element("id", "build-context").click()
    wait_until(
        driver, lambda d: " of 200 words" in d.find_element("id", "context-meta").text, "a context block"
    )
    assert "Berlin" in driver.find_element("id", "context").text
    shot(driver, "playground")

    driver.find_element("id", "tab-episodes").click()
    shown = lambda d: any(HOSTILE_TURN in text for text in texts(d, "#episodes .episode-text"))  # noqa: E731
    wait_until(driver, shown, "the hostile turn, as text, never as HTML")
    shot(driver, "episodes")
    driver.find_element("css selector", '#episodes li[data-episode="t2"] button.danger').click()
    wait_until(driver, lambda d: d.find_element("id", "confirm").is_displayed(), "the confirmation")
    driver.find_element("id", "confirm-ok").click()
    wait_until(
        driver, lambda d: "Episode t2 forgotten" in d.find_element("id", "status").text, "the forget job"
    )
    assert "Deletion receipt: del_" in driver.find_element("id", "status").text
    # What only t2 taught is gone; Paris, which it had superseded, is current again.
    driver.find_element("id", "tab-records").click()
    wait_until(driver, lambda d: texts(d, "#records .record-text") == ["Ana lives in Paris."], "Paris back")
    assert texts(driver, "#timeline .record-text") == ["Ana lives in Paris."]
    assert [
        e.get_attribute("data-episode") for e in driver.find_elements("css selector", "#episodes li")
    ] == ["t1"]

    assert driver.execute_script("return window.__pwned === undefined")
    assert not driver.find_elements("css selector", "main img, #users img, #status img")

    driver.find_element("id", "forget-user").click()  # the user, and the receipt of what went
    wait_until(driver, lambda d: d.find_element("id", "confirm").is_displayed(), "the confirmation")
    driver.find_element("id", "confirm-ok").click()
    forgot = "Forgot user ana. Deletion receipt: del_"
    wait_until(driver, lambda d: forgot in d.find_element("id", "status").text, "the user's receipt")
    receipt_id = driver.find_element("id", "status").text.split("Deletion receipt: ")[1].rstrip(".")
    receipt = api.request("GET", api.memory_path(tenant, user) + f"/deletions/{receipt_id}").json()
    assert receipt["erased"]["dynamodb"]["episodes"] == 1 and receipt["erased"]["dynamodb"]["records"] == 1
    assert not driver.find_elements("css selector", f'#users button[data-user="{user}"]')


def test_a_hostile_user_id_is_shown_as_text_and_the_tabs_follow_the_arrow_keys(
    browser: Any, api: Api
) -> None:
    from selenium.webdriver.common.keys import Keys

    if api.remote:
        pytest.skip("a deployed stack serves no page: `hippocampus ui` does (tests/client/test_client_ui.py)")
    driver = browser
    driver.get(f"{api.base_url}/ui/?tenant=acme&user=alice")
    wait_until(driver, lambda d: "Showing alice" in d.find_element("id", "status").text, "the user view")
    hostile = '<img src=x onerror="window.__pwned=3">'
    field = driver.find_element("id", "user-id")
    field.clear()
    field.send_keys(hostile + Keys.ENTER)
    wait_until(
        driver, lambda d: "is not a valid user id" in d.find_element("id", "status").text, "the refusal"
    )
    assert hostile in driver.find_element("id", "status").text
    assert not driver.find_elements("css selector", "#status img")
    assert driver.execute_script("return window.__pwned === undefined")

    driver.find_element("id", "tab-summary").click()
    driver.switch_to.active_element.send_keys(Keys.ARROW_RIGHT)
    assert driver.find_element("id", "tab-records").get_attribute("aria-selected") == "true"
    assert driver.switch_to.active_element.get_attribute("id") == "tab-records"
    driver.switch_to.active_element.send_keys(Keys.END)
    assert driver.find_element("id", "tab-playground").get_attribute("aria-selected") == "true"
    assert driver.find_element("id", "panel-playground").is_displayed()
    for labelled in driver.find_elements("css selector", "input, select, textarea"):
        label_for = driver.find_elements("css selector", f'label[for="{labelled.get_attribute("id")}"]')
        assert label_for, f"#{labelled.get_attribute('id')} has no label"
