"""projector.bounded: every read has a bound (regular files only, a size cap before reading, no link followed) and
every JSON text a depth, digit, constant and duplicate-key bound."""

from __future__ import annotations

import os
import stat

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


# The bounded JSON reader's words: the key named twice, the kind of a file, the system's errors, short reads.


@pytest.mark.parametrize("text, reason", [
    ('{"a": 1, "b": 2, "b": 3}', 'the key "b" appears twice in one object'),  # the key that repeats, not the first
    ('{"b": 1, "a": 2, "a": 3, "b": 4}', 'the key "a" appears twice in one object'),  # the first one repeated
    ('{"\\u00e9": 1, "é": 2}', 'the key "\\u00e9" appears twice in one object'),  # escape and letter: one key
    ('{"a\u2028": 1, "a\u2028": 2}', 'the key "a\\u2028" appears twice in one object'),
])
def test_the_key_named_twice_is_quoted_as_ascii_json(text, reason):
    with pytest.raises(bounded.BadJSON) as info:
        bounded.loads(text)
    assert str(info.value) == reason


@pytest.mark.parametrize("mode, kind", [
    (stat.S_IFDIR | 0o755, "a folder"), (stat.S_IFIFO, "a FIFO"), (stat.S_IFCHR, "a character device"),
    (stat.S_IFBLK, "a block device"), (stat.S_IFSOCK, "a socket"), (stat.S_IFLNK | 0o777, "a symbolic link"),
    (0, "not a regular file"),  # no file type at all (as a platform's own kinds, a door or a whiteout, read here)
    (0o170000, "not a regular file"),
])
def test_kind_of_every_file_type(mode, kind):
    assert bounded.kind_of(mode) == kind


def test_an_os_error_is_said_in_the_systems_words(tmp_path, monkeypatch):
    """An error of the system is its own words (``strerror``), without the errno and path ``str()`` adds; an
    ``OSError`` without them is its text. Both on opening and on reading."""
    with pytest.raises(bounded.Unreadable) as info:
        bounded.read_regular(tmp_path / "nope", 10)
    assert str(info.value) == "No such file or directory"
    p = tmp_path / "f"
    p.write_bytes(b"x")
    real_open = os.open

    def refuse_open(*_a, **_kw):
        raise OSError("the descriptor table is full")

    monkeypatch.setattr(os, "open", refuse_open)
    with pytest.raises(bounded.Unreadable) as info:
        bounded.read_regular(p, 10)
    assert str(info.value) == "the descriptor table is full"
    monkeypatch.setattr(os, "open", real_open)
    for error, said in ((OSError(5, "Input/output error"), "Input/output error"),
                        (OSError("the disk went away"), "the disk went away")):
        def refuse_read(_fd, _n, error=error):
            raise error

        monkeypatch.setattr(os, "read", refuse_read)
        with pytest.raises(bounded.Unreadable) as info:
            bounded.read_regular(p, 10)
        assert str(info.value) == said


def test_a_file_read_a_byte_at_a_time_is_still_bounded(tmp_path, monkeypatch):
    """A read may return fewer bytes than asked (a slow file system): the file is read on until it ends or holds
    one byte past the limit, so a file that grew after its size was taken is still refused."""
    p = tmp_path / "f"
    p.write_bytes(b"0123456789")
    real_read = os.read
    monkeypatch.setattr(os, "read", lambda fd, n: real_read(fd, min(n, 1)))
    assert bounded.read_regular(p, 10) == b"0123456789"
    p.write_bytes(b"0123456789A")
    real_fstat = os.fstat

    class Small:  # the size taken before the file grew
        def __init__(self, st):
            self.st_mode, self.st_size = st.st_mode, 10

    monkeypatch.setattr(os, "fstat", lambda fd: Small(real_fstat(fd)))
    with pytest.raises(bounded.Unreadable) as info:
        bounded.read_regular(p, 10)
    assert str(info.value) == "it grew past the limit of 10 bytes while being read"
