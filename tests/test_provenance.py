"""Helpers of rheotheory.provenance that scripts share (row merging)."""


def test_merge_rows_replaces_by_key_and_keeps_each_rows_command(tmp_path):
    import json

    from rheotheory.provenance import merge_rows

    f = tmp_path / "r.json"
    assert merge_rows(f, [{"k": "a"}], "k", "rows") == [{"k": "a"}]
    f.write_text(json.dumps({"command": "first", "rows": [{"k": "a", "v": 1}, {"k": "b", "v": 2, "command": "b's"}]}))
    got = merge_rows(f, [{"k": "b", "v": 3, "command": "now"}, {"k": "c", "command": "now"}], "k", "rows")
    assert got == [{"k": "a", "v": 1, "command": "first"}, {"k": "b", "v": 3, "command": "now"},
                   {"k": "c", "command": "now"}]
