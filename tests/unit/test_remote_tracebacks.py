"""A remote traceback's text rebuilt as traceback objects (``future.traceback()``): the
frames, files and lines of the text, each line's source where its file is readable here,
and no column marks (the stub standing for the remote frame has its own columns)."""

import traceback

from xsched.errors import as_traceback

SOURCE = (
    "def level2(x):\n"
    "    return {'a': 1}[x]\n"
    "\n"
    "def accent(x):\n"
    "    raise ValueError('température trop élevée: ' + str(x) + ' degrés, bien au-delà')\n"
    "x = 1\n"
)


def test_frames_lines_and_no_column_marks(tmp_path):
    path = tmp_path / "job.py"
    path.write_text(SOURCE, encoding="utf-8")
    text = (f'Traceback (most recent call last):\n  File "{path}", line 2, in level2\n'
            "    return {'a': 1}[x]\n           ~~~~~~~~^^^\n"
            f'  File "{path}", line 5, in accent\n    raise ValueError(...)\n'
            f'  File "{path}", line 6, in <module>\n'
            '  File "<dynamic-code>", line 3, in gone\nValueError: 1\n')
    tb = as_traceback(text)
    frames = traceback.extract_tb(tb)
    assert [(f.lineno, f.name) for f in frames] == [(2, "level2"), (5, "accent"), (6, "<module>"), (3, "gone")]
    shown = "".join(traceback.format_tb(tb))
    assert "return {'a': 1}[x]" in shown and "température" in shown and "x = 1" in shown
    assert "^" not in shown and "~" not in shown
