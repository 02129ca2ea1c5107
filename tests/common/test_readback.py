"""Reading a write back: does the object carry what a merge patch set?"""

from __future__ import annotations

from etctl.common._readback import carries


def test_a_patch_is_carried_when_every_field_it_sets_holds() -> None:
    stored = {
        "metadata": {"name": "a", "resourceVersion": "7"},
        "status": {"step": "Script", "conditions": [{"type": "X", "status": "True"}], "n": 1},
    }
    assert carries(stored, {"status": {"step": "Script"}})
    assert carries(stored, {"status": {"conditions": [{"type": "X", "status": "True"}]}})
    assert not carries(stored, {"status": {"step": "Joining"}})
    assert not carries(stored, {"status": {"n": 2}})
    assert not carries(stored, {"spec": {"replicas": 3}})


def test_null_removes_and_lists_compare_whole_without_null_fields() -> None:
    stored = {"status": {"scaler": None, "items": [{"type": "X", "reason": "R"}]}}
    assert carries(stored, {"status": {"scaler": None, "gone": None}})
    assert not carries({"status": {"scaler": "s"}}, {"status": {"scaler": None}})
    # The server drops null fields of list elements; a written element still matches.
    assert carries(stored, {"status": {"items": [{"type": "X", "reason": "R", "message": None}]}})
    assert not carries(stored, {"status": {"items": [{"type": "X"}]}})
    assert not carries(stored, {"status": {"items": []}})
