"""projector.bounded: every read has a bound (regular files only, a size cap before reading, no link followed) and
every JSON text a depth, digit, constant and duplicate-key bound."""

from __future__ import annotations

import os

import pytest

from projector import bounded


def test_a_regular_file_within_its_limit_is_read_whole(tmp_path):
    p = tmp_path / "f"
    p.write_bytes(b"x" * 10)
    assert bounded.read_regular(p, 10) == b"x" * 10


def test_a_file_over_its_limit_is_refused_before_it_is_read(tmp_path):
    p = tmp_path / "f"
    p.write_bytes(b"x" * 11)
    with pytest.raises(bounded.Unreadable, match="11 bytes, over the limit of 10"):
        bounded.read_regular(p, 10)


@pytest.mark.parametrize("target", ["/dev/zero", "/dev/null"])
def test_a_device_is_refused(target):
    with pytest.raises(bounded.Unreadable, match="a character device, not a regular file"):
        bounded.read_regular(target, 10, follow_links=True)


def test_a_fifo_is_refused_without_blocking(tmp_path):
    p = tmp_path / "fifo"
    os.mkfifo(p)
    with pytest.raises(bounded.Unreadable, match="a FIFO, not a regular file"):
        bounded.read_regular(p, 10)


def test_a_folder_is_refused(tmp_path):
    with pytest.raises(bounded.Unreadable):
        bounded.read_regular(tmp_path, 10)


def test_a_link_is_not_followed_unless_asked(tmp_path):
    real = tmp_path / "real"
    real.write_bytes(b"ok")
    link = tmp_path / "link"
    link.symlink_to(real)
    with pytest.raises(bounded.Unreadable, match="symbolic link"):
        bounded.read_regular(link, 10)
    assert bounded.read_regular(link, 10, follow_links=True) == b"ok"
    dev = tmp_path / "zero"
    dev.symlink_to("/dev/zero")
    with pytest.raises(bounded.Unreadable, match="symbolic link"):
        bounded.read_regular(dev, 10)


def test_a_missing_file_is_unreadable_and_an_oserror(tmp_path):
    with pytest.raises(OSError):
        bounded.read_regular(tmp_path / "nope", 10)


def test_json_within_bounds_is_parsed():
    assert bounded.loads(b'{"a": [1, 2.5, "x", null, true]}') == {"a": [1, 2.5, "x", None, True]}


@pytest.mark.parametrize("text, reason", [
    ("[" * 65 + "]" * 65, "nested deeper than 64"),
    ("[" * 5000 + "]" * 5000, "nested deeper than 64"),
    ('{"a": ' * 100 + "1" + "}" * 100, "nested deeper than 64"),
    ("1" * 5000, "5000 digits"),
    ('{"n": -' + "9" * 65 + "}", "65 digits"),
    ("NaN", "NaN is not a JSON value"),
    ("[Infinity]", "Infinity is not a JSON value"),
    ('{"a": 1, "a": 2}', 'the key "a" appears twice'),
    (b"\xff", "not UTF-8"),
    ("{", "not JSON"),
])
def test_json_past_a_bound_is_refused(text, reason):
    with pytest.raises(bounded.BadJSON, match=reason):
        bounded.loads(text)


def test_exactly_the_limit_depth_is_accepted():
    assert bounded.loads("[" * 64 + "]" * 64) is not None
    assert bounded.loads("9" * 64) == int("9" * 64)


def test_a_syntax_error_has_its_position():
    with pytest.raises(bounded.BadJSON) as exc:
        bounded.loads('{\n  "a": }')
    assert (exc.value.line, exc.value.col) == (2, 8)


def test_a_file_of_several_reads_comes_back_whole_and_no_more_than_limit_plus_one_bytes_are_read(tmp_path,
                                                                                                   monkeypatch):
    p = tmp_path / "big"
    data = bytes(range(256)) * (10 * 1024 + 7)  # about 2.5 MiB: three reads of at most 1 MiB
    p.write_bytes(data)
    asked: list[int] = []
    real_read = os.read

    def counting_read(fd, n):
        asked.append(n)
        return real_read(fd, n)

    monkeypatch.setattr(os, "read", counting_read)
    assert bounded.read_regular(p, len(data)) == data
    assert max(asked) == 1 << 20 and sum(asked) <= len(data) + 1 + (1 << 20)
    asked.clear()
    real_fstat = os.fstat

    class Small:  # the file "grew" after fstat: the read itself stops at limit + 1 bytes
        def __init__(self, st):
            self.st_mode, self.st_size = st.st_mode, 0

    monkeypatch.setattr(os, "fstat", lambda fd: Small(real_fstat(fd)))
    with pytest.raises(bounded.Unreadable, match="grew past the limit of 10 bytes"):
        bounded.read_regular(p, 10)
    assert asked == [11]


def test_a_link_named_relative_to_a_folder_descriptor_is_refused_as_a_link(tmp_path):
    (tmp_path / "real").write_bytes(b"ok")
    (tmp_path / "link").symlink_to("real")
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with pytest.raises(bounded.Unreadable) as info:
            bounded.read_regular("link", 10, dir_fd=fd)
        assert str(info.value) == "it is a symbolic link, which is not followed"
        assert bounded.read_regular("real", 10, dir_fd=fd) == b"ok"
    finally:
        os.close(fd)


def test_the_errors_keep_their_reason_and_position():
    e = bounded.Unreadable("why")
    assert (str(e), e.reason, e.args) == ("why", "why", ("why",))
    j = bounded.BadJSON("bad", 3, 4)
    assert (str(j), j.reason, j.line, j.col) == ("bad", "bad", 3, 4)
    assert (bounded.BadJSON("x").line, bounded.BadJSON("x").col) == (0, 0)
