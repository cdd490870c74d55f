"""Sign-in under attack: rate limits per address and per account, one password hash per
attempt whether the account exists or not, one hash at a time per machine, at low priority.

Hashes are counted, not timed: a timing test would be slow and flaky, and every hash goes
through one of the two key-derivation functions werkzeug calls.
"""
import fcntl
import hashlib
import os
import sys
import threading
from pathlib import Path

import pytest

from tests.factories import RESEARCHER_PASSWORD
from webapp import priority, sign_in_guard


@pytest.fixture
def hashes(monkeypatch):
    """The niceness of every key derivation run while the test runs, one entry per run."""
    runs = []
    for name in ("scrypt", "pbkdf2_hmac"):
        real = getattr(hashlib, name)

        def counted(*args, _real=real, **kwargs):
            runs.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))
            return _real(*args, **kwargs)

        monkeypatch.setattr(hashlib, name, counted)
    return runs


def attempt(client, username="ada", password="wrong password!", address="10.0.0.1"):
    return client.post("/auth/login", data={"username": username, "password": password},
                       environ_base={"REMOTE_ADDR": address})


def test_an_address_gets_429_after_ten_attempts_and_no_hash_is_computed(client, researcher, hashes):
    for i in range(10):
        assert attempt(client, username=f"someone-{i}").status_code == 401
    assert len(hashes) == 10
    refused = attempt(client, password=RESEARCHER_PASSWORD)  # even the right password
    assert refused.status_code == 429
    # A sliding minute, estimated: the ten count for a tenth of the next minute too.
    assert 1 <= int(refused.headers["Retry-After"]) <= 66
    assert "Too many sign-in attempts" in refused.get_data(as_text=True)
    assert len(hashes) == 10
    assert attempt(client, password=RESEARCHER_PASSWORD, address="10.0.0.2").status_code == 302


def test_an_ipv6_client_is_one_address_across_its_64(client, researcher, hashes):
    for i in range(10):
        assert attempt(client, f"someone-{i}", address=f"2001:db8:1:2::{i:x}").status_code == 401
    assert attempt(client, address="2001:db8:1:2:ffff::1").status_code == 429
    assert attempt(client, address="2001:db8:1:3::1").status_code == 401  # the next /64


def test_failures_of_one_address_on_one_account_are_held_apart(app, client, researcher, hashes):
    app.config["LOGIN_FAILURES_PER_ADDRESS_AND_ACCOUNT"] = "3 per hour"
    for _ in range(3):
        assert attempt(client).status_code == 401
    refused = attempt(client, password=RESEARCHER_PASSWORD)
    assert refused.status_code == 429 and int(refused.headers["Retry-After"]) > 60
    assert attempt(client, "nobody").status_code == 401  # the address may try other accounts
    assert attempt(app.test_client(), password=RESEARCHER_PASSWORD,
                   address="10.0.0.2").status_code == 302  # the owner elsewhere is not held


def test_an_account_gets_429_from_browsers_it_never_signed_in_on(app, client, researcher, factory,
                                                                 hashes):
    app.config["LOGIN_FAILURES_PER_ACCOUNT"] = "20 per hour"
    factory.researcher("grace")
    hashes.clear()  # grace's own
    for i in range(20):
        assert attempt(client, address=f"10.0.1.{i}").status_code == 401
    refused = attempt(client, password=RESEARCHER_PASSWORD, address="10.0.2.1")
    assert refused.status_code == 429
    assert int(refused.headers["Retry-After"]) > 60  # the account's window is an hour
    assert len(hashes) == 20
    assert attempt(client, "grace", RESEARCHER_PASSWORD, address="10.0.2.1").status_code == 302


def test_nobody_can_lock_the_owner_out_of_a_browser_they_signed_in_on(app, researcher, hashes):
    """The red team locked a named researcher out with 20 wrong passwords from anywhere."""
    owner, attacker = app.test_client(), app.test_client()
    assert attempt(owner, password=RESEARCHER_PASSWORD, address="10.0.9.9").status_code == 302
    owner.post("/auth/logout")
    for i in range(60):  # more than the account's limit, from many addresses
        attempt(attacker, address=f"10.0.{5 + i // 10}.{i % 10}")
    assert attempt(attacker, password=RESEARCHER_PASSWORD, address="10.0.8.1").status_code == 429
    assert attempt(owner, password=RESEARCHER_PASSWORD, address="10.0.9.9").status_code == 302


def test_the_browser_mark_is_per_account_and_cannot_be_forged(app, researcher, factory, hashes):
    app.config["LOGIN_FAILURES_PER_ACCOUNT"] = "2 per hour"
    factory.researcher("grace")
    browser = app.test_client()
    assert attempt(browser, "grace", RESEARCHER_PASSWORD).status_code == 302
    mark = browser.get_cookie(sign_in_guard.BROWSER_COOKIE, path="/auth/")
    assert mark.http_only and mark.max_age > 86400 * 300
    for i in range(2):
        attempt(app.test_client(), address=f"10.0.6.{i}")
    # grace's mark is not ada's, and a mark signed with another key is no mark.
    assert attempt(browser, password=RESEARCHER_PASSWORD, address="10.0.6.9").status_code == 429
    forged = app.test_client()
    forged.set_cookie(sign_in_guard.BROWSER_COOKIE, mark.value[:-2] + "xx", path="/auth/")
    assert attempt(forged, password=RESEARCHER_PASSWORD, address="10.0.6.8").status_code == 429


def test_a_known_browser_has_its_own_failure_limit(app, researcher, hashes):
    app.config["LOGIN_FAILURES_PER_BROWSER"] = "3 per hour"
    browser = app.test_client()
    assert attempt(browser, password=RESEARCHER_PASSWORD).status_code == 302
    browser.post("/auth/logout")
    assert [attempt(browser, address=f"10.0.7.{i}").status_code for i in range(4)] == \
        [401, 401, 401, 429]
    assert attempt(app.test_client(), password=RESEARCHER_PASSWORD,
                   address="10.0.7.9").status_code == 302


def test_successful_sign_ins_do_not_use_up_the_account_limit(app, researcher):
    for i in range(25):
        client = app.test_client()
        assert attempt(client, password=RESEARCHER_PASSWORD, address=f"10.0.3.{i}").status_code == 302


@pytest.mark.parametrize("username, password, status", [
    ("ada", RESEARCHER_PASSWORD, 302),
    ("ada", "wrong password!", 401),
    ("nobody", "wrong password!", 401),
    ("nobody", "wrong password!", 401),  # the second miss costs what the first did
])
def test_every_attempt_costs_exactly_one_hash(client, researcher, hashes, username, password, status):
    assert attempt(client, username, password).status_code == status
    assert len(hashes) == 1


def test_unknown_and_known_usernames_cost_one_hash_each_in_a_row(client, researcher, hashes):
    for username in ("nobody", "ada", "someone-else", "ada"):
        attempt(client, username)
    assert len(hashes) == 4


def test_while_another_process_hashes_sign_in_answers_503_without_hashing(app, client, researcher,
                                                                         hashes):
    lock_path = Path(app.instance_path) / sign_in_guard.HASH_LOCK_FILE
    with open(lock_path, "a") as other_worker:
        fcntl.flock(other_worker, fcntl.LOCK_EX | fcntl.LOCK_NB)
        busy = attempt(client, password=RESEARCHER_PASSWORD)
        assert busy.status_code == 503 and busy.headers["Retry-After"] == "1"
        assert "try again" in busy.get_data(as_text=True)
        assert hashes == []
    assert attempt(client, password=RESEARCHER_PASSWORD).status_code == 302
    assert len(hashes) == 1


def test_a_busy_answer_does_not_count_against_the_account(app, client, researcher, hashes):
    lock_path = Path(app.instance_path) / sign_in_guard.HASH_LOCK_FILE
    with open(lock_path, "a") as other_worker:
        fcntl.flock(other_worker, fcntl.LOCK_EX | fcntl.LOCK_NB)
        for i in range(25):
            assert attempt(client, address=f"10.0.4.{i}").status_code == 503
    assert attempt(client, password=RESEARCHER_PASSWORD).status_code == 302


def test_the_hash_runs_while_the_machine_slot_is_held(app, client, researcher, monkeypatch):
    lock_path = Path(app.instance_path) / sign_in_guard.HASH_LOCK_FILE
    real, held = hashlib.pbkdf2_hmac, []

    def probing(*args, **kwargs):
        with open(lock_path, "a") as other_worker:
            try:
                fcntl.flock(other_worker, fcntl.LOCK_EX | fcntl.LOCK_NB)
                held.append(False)
            except BlockingIOError:
                held.append(True)
        return real(*args, **kwargs)

    monkeypatch.setattr(hashlib, "pbkdf2_hmac", probing)
    attempt(client, password=RESEARCHER_PASSWORD)
    attempt(client, "nobody")
    assert held == [True, True]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread niceness is Linux's")
def test_sign_in_hashes_at_low_priority(client, researcher, hashes):
    base = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    attempt(client, password=RESEARCHER_PASSWORD)
    attempt(client, "nobody")
    assert hashes == [min(19, base + priority.NICENESS)] * 2
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == base


def test_the_password_page_shares_the_limits(client, researcher, hashes):
    """Its current-password check is a password guess too (from a stolen session, say)."""
    assert attempt(client, password=RESEARCHER_PASSWORD).status_code == 302
    wrong = {"current_password": "not my password", "new_password": "a brand new passphrase",
             "confirm_password": "a brand new passphrase"}
    statuses = [client.post("/auth/password", data=wrong,
                            environ_base={"REMOTE_ADDR": "10.0.0.1"}).status_code
                for _ in range(10)]
    assert statuses == [401] * 9 + [429]  # the sign-in was the address's first attempt
    assert len(hashes) == 10
