"""The dashboard in a real browser (Debian's chromium via Playwright) against ``retain ui``
subprocesses over stores filled here: every page renders clean at 1280 and 390 px, search, the
supersede chain, pin and its audit entry, roles, redaction, injection, 404, a broken audit chain and
a store locked by a writer. Screenshots go to reports/ui/."""

from __future__ import annotations

import sqlite3
from urllib.parse import quote

import pytest

from retain.encoders.basis import HashingEncoder
from retain.memory import Memory
from retain.ui.app import create_app
from retain.ui.auth import read_only
from ui.conftest import REPORTS, Watched, start_ui, stop
from ui.fill import EVIL, SECRET, Filled


def pages(f: Filled) -> dict[str, str]:
    return {
        "namespaces": "/",
        "records": "/records?ns=trip",
        "record": f"/record?ns=trip&id={f.old_id}",
        "budget": "/budget?ns=trip",
        "provenance": f"/provenance?id={f.provenance_id}",
        "timeline": "/timeline?ns=trip",
        "audit": "/audit?ns=trip",
        "diff": "/diff?ns=trip&a=0&b=1000",
        "conflicts": "/records?ns=rules2",
    }


@pytest.mark.parametrize("width", [1280, 390])
def test_every_page_renders_clean_and_fits(server: str, filled: Filled, watched, width: int) -> None:
    REPORTS.mkdir(parents=True, exist_ok=True)
    w: Watched = watched(width)
    for name, path in pages(filled).items():
        page = w.visit(server + path)
        assert page.locator("h1").count() == 1
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 1, f"{name} is {overflow} px wider than {width}"
        unlabelled = page.evaluate(
            "[...document.querySelectorAll('input:not([type=hidden]), select')].filter(e => !e.closest('label')).length"
        )
        assert unlabelled == 0, name
        page.screenshot(path=str(REPORTS / f"{name}-{width}.png"), full_page=True)


def test_search_finds_a_known_record(server: str, filled: Filled, watched) -> None:
    page = watched(1280).visit(server + "/records?ns=trip")
    page.get_by_label("Text").fill("kayaking lake")
    page.get_by_label("Text").press("Enter")
    page.wait_for_url("**q=kayaking*")
    assert page.locator("#records tbody tr").count() == 1
    assert page.locator("#records").get_by_text(filled.plain_id).count() == 1


def test_a_superseded_record_shows_its_successor(server: str, filled: Filled, watched) -> None:
    page = watched(1280).visit(server + f"/record?ns=trip&id={filled.old_id}")
    assert page.locator("#successor").inner_text() == filled.new_id
    page.locator("#successor").click()
    page.wait_for_url(f"**id={filled.new_id}*")
    assert "Hotel Adlon" in page.locator("#content").inner_text()


def test_the_pin_button_pins_and_the_audit_page_shows_it(server: str, filled: Filled, watched) -> None:
    w = watched(1280)
    page = w.visit(server + f"/record?ns=trip&id={filled.plain_id}")
    assert page.locator("#pinned").inner_text() == "no"
    page.get_by_role("button", name="Pin").focus()
    page.keyboard.press("Enter")  # keyboard-usable
    page.wait_for_url("**done=pin*")
    assert page.locator("#pinned").inner_text() == "yes" and page.locator("#tier").inner_text() == "core"
    audit = w.visit(server + "/audit?ns=trip&op=pin")
    row = audit.locator("table.audit tbody tr").first
    assert filled.plain_id in row.inner_text() and "dashboard: local-admin" in row.inner_text()
    assert w.problems == []


def test_a_read_only_principal_sees_no_write_button_and_a_forged_post_gets_403(
    filled: Filled, serve_app, watched
) -> None:
    mem = Memory(filled.path, encoder=HashingEncoder(64), state_scorer=False)
    base = serve_app(create_app(mem, read_only("viewer")))
    w = watched(1280)
    page = w.visit(base + f"/record?ns=trip&id={filled.secret_id}")
    assert page.get_by_role("button", name="Pin").count() == 0
    assert page.get_by_role("button", name="Forget").count() == 0
    forged = page.request.post(base + "/record/forget", form={"ns": "trip", "id": filled.secret_id, "csrf": "x"})
    assert forged.status == 403
    assert page.request.get(base + f"/record?ns=trip&id={filled.secret_id}").status == 200  # not forgotten
    assert page.get_by_label("Reveal").count() == 0
    revealed = w.visit(base + f"/record?ns=trip&id={filled.secret_id}&reveal=1")
    assert SECRET not in revealed.content()  # no reveal right: the parameter is ignored


def test_a_forged_post_without_the_form_token_gets_403(server: str, filled: Filled, watched) -> None:
    page = watched(1280).visit(server + "/")
    forged = page.request.post(server + "/record/forget", form={"ns": "trip", "id": filled.plain_id})
    assert forged.status == 403


def test_redacted_values_never_reach_the_page_unless_revealed(server: str, filled: Filled, watched) -> None:
    w = watched(1280)
    for path in ("/records?ns=trip", f"/record?ns=trip&id={filled.secret_id}", "/timeline?ns=trip"):
        html = w.visit(server + path).content()
        assert SECRET not in html and "[EMAIL]" in html, path
    assert SECRET in w.visit(server + f"/record?ns=trip&id={filled.secret_id}&reveal=1").content()
    assert SECRET in w.visit(server + "/records?ns=trip&reveal=1").content()


def test_markup_in_a_namespace_query_or_id_is_shown_as_text(server: str, watched) -> None:
    w = watched(1280)
    page = w.visit(server + f"/records?ns={quote(EVIL)}")
    assert EVIL in page.locator("h1").inner_text()
    page = w.visit(server + f"/records?ns={quote(EVIL)}&q={quote(EVIL)}")
    assert page.get_by_label("Text").input_value() == EVIL
    page = w.visit(server + f"/record?ns=trip&id={quote(EVIL)}", status=404)
    assert EVIL in page.locator("#message").inner_text()
    assert page.locator("script").count() == 0 and w.problems == []


def test_a_provenance_id_that_does_not_exist_is_a_404_page(server: str, watched) -> None:
    page = watched(1280).visit(server + "/provenance?id=01NOSUCHCONTEXT", status=404)
    assert "01NOSUCHCONTEXT" in page.locator("#message").inner_text()
    assert "Traceback" not in page.content()


def test_a_broken_audit_chain_opens_read_only_and_says_so_everywhere(broken_server, watched) -> None:
    base, filled = broken_server
    w = watched(1280)
    for path in pages(filled).values():
        page = w.visit(base + path)
        assert "Audit chain broken" in page.locator("#audit-broken").inner_text()
    page = w.visit(base + f"/record?ns=trip&id={filled.plain_id}")
    assert page.get_by_role("button", name="Pin").count() == 0
    token_page = page.content()
    assert "csrf" not in token_page  # no write form at all
    assert page.request.post(base + "/record/pin", form={"ns": "trip", "id": filled.plain_id}).status == 403


def test_a_store_locked_by_a_writer_still_loads(server: str, filled: Filled, watched) -> None:
    writer = sqlite3.connect(filled.path, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('ui-test-lock', 'held')")
    try:
        w = watched(1280)
        for path in pages(filled).values():
            html = w.visit(server + path).content()
            assert "database is locked" not in html
        proc, fresh = start_ui(filled.path)  # opening the store while the writer holds its lock
        try:
            assert "trip" in w.visit(fresh + "/").content()
        finally:
            stop(proc)
    finally:
        writer.execute("ROLLBACK")
        writer.close()


def test_conflicts_are_shown_and_a_writer_resolves_one_audited(server: str, filled: Filled, watched) -> None:
    (ns, conflict_id), _ = filled.conflicts
    new_id, old_id = conflict_id.split(":")
    w = watched(1280)
    assert w.visit(server + "/").locator(f'a[href$="ns={ns}#conflicts"]').inner_text() == "1"
    page = w.visit(server + f"/records?ns={ns}")
    section = page.locator("section:has(#conflicts)")
    assert "5,000 EUR" in section.inner_text() and "4,000 EUR" in section.inner_text()
    assert "Which holds now" in section.locator(".question").inner_text()
    page = w.visit(server + f"/record?ns={ns}&id={old_id}")
    page.get_by_label("Keep").select_option("new")
    page.get_by_role("button", name="Resolve conflict").focus()
    page.keyboard.press("Enter")  # keyboard-usable
    page.wait_for_url("**done=resolve*")
    assert page.locator("#successor").inner_text() == new_id  # the newer rule retired the older one
    assert page.locator("section:has(#conflicts)").inner_text().endswith("None.")
    audit = w.visit(server + f"/audit?ns={ns}&op=resolve_conflict")
    row = audit.locator("table.audit tbody tr").first
    text = row.inner_text()
    assert old_id in text and "dashboard: local-admin" in text and "keep=new" in text
    assert w.problems == []


def test_a_read_only_principal_sees_conflicts_but_no_resolve_button_and_a_forged_resolve_gets_403(
    filled: Filled, serve_app, watched
) -> None:
    _, (ns, conflict_id) = filled.conflicts
    mem = Memory(filled.path, encoder=HashingEncoder(64), state_scorer=False)
    base = serve_app(create_app(mem, read_only("viewer")))
    w = watched(1280)
    page = w.visit(base + f"/records?ns={ns}")
    assert "Which holds now" in page.locator("section:has(#conflicts)").inner_text()
    assert page.get_by_role("button", name="Resolve conflict").count() == 0
    form = {"ns": ns, "id": conflict_id, "keep": "both", "csrf": "x"}
    assert page.request.post(base + "/record/resolve", form=form).status == 403
    assert [c.id for c in mem.conflicts(ns)] == [conflict_id]  # still open
    assert not [e for e in mem.store.audit_log(ns) if e["op"] == "resolve_conflict"]


def test_the_budget_page_draws_the_last_evaluation(server: str, watched) -> None:
    page = watched(1280).visit(server + "/budget?ns=trip")
    assert page.get_by_role("img", name="recall@10 (hot memory) against the budget").count() == 1
    assert page.get_by_role("img", name="hit rate (evidence held) against the budget").count() == 1
    assert "store.db.eval.json" in page.locator("#evaluation").inner_text()
