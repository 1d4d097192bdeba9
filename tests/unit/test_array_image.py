"""``xa.image.imread``: image files as a stack, a block per file, in natural order, read by
imageio/Pillow or a reader of one's own, with mistakes named; real PNG and .npy files."""

from __future__ import annotations

import os

import numpy as np
import pytest

import xsched.array as xa

Image = pytest.importorskip("PIL.Image")


def _frames(tmp_path, n=4, shape=(6, 5)):
    rng = np.random.default_rng(0)
    frames = [rng.integers(0, 255, shape, dtype=np.uint8) for _ in range(n)]
    for i, frame in enumerate(frames):
        Image.fromarray(frame).save(tmp_path / f"frame_{i}.png")
    return frames


def test_a_glob_of_images_is_a_stack_of_one_block_per_file(tmp_path):
    frames = _frames(tmp_path, n=12)
    movie = xa.image.imread(str(tmp_path / "frame_*.png"))
    assert movie.shape == (12, 6, 5) and movie.dtype == np.uint8 and movie.numblocks == (12, 1, 1)
    np.testing.assert_array_equal(movie.compute(), np.stack(frames))  # (frame_10 after frame_9)
    np.testing.assert_array_equal(movie[3:5].mean(axis=0).compute(), np.stack(frames[3:5]).mean(axis=0))
    listed = xa.image.imread([str(tmp_path / "frame_2.png"), str(tmp_path / "frame_0.png")])
    np.testing.assert_array_equal(listed.compute(), np.stack([frames[2], frames[0]]))


def test_preprocess_and_a_reader_of_ones_own(tmp_path):
    frames = [np.arange(6.0).reshape(2, 3) * i for i in range(3)]
    for i, frame in enumerate(frames):
        np.save(tmp_path / f"p{i}.npy", frame)
    got = xa.image.imread(str(tmp_path / "*.npy"), imread=np.load, preprocess=lambda a: a[:, :2] * 2)
    assert got.shape == (3, 2, 2)
    np.testing.assert_array_equal(got.compute(), np.stack([f[:, :2] * 2 for f in frames]))


def test_mistakes_are_named(tmp_path):
    _frames(tmp_path, n=2)
    Image.fromarray(np.zeros((3, 3), np.uint8)).save(tmp_path / "frame_2.png")
    stack = xa.image.imread(str(tmp_path / "frame_*.png"))
    with pytest.raises(ValueError, match=r"frame_2.png holds an image of shape \(3, 3\).*first file's is \(6, 5\)"):
        stack.compute()
    with pytest.raises(FileNotFoundError, match="imread: no file matches"):
        xa.image.imread(str(tmp_path / "nothing_*.png"))
    with pytest.raises(TypeError, match="imread= must be a function"):
        xa.image.imread(str(tmp_path / "frame_0.png"), imread="pillow")
    assert os.path.exists(tmp_path / "frame_0.png")
