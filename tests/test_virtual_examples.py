"""Virtual examples: one-pixel translations of images (shift_images, load_usps_virtual)."""

import numpy as np
import pytest

from sparsekm import datasets
from sparsekm.datasets import SHIFTS_8, shift_images


def test_shift_images_tiny_synthetic():
    # two 3x3 images with distinct pixel values
    X = np.arange(18, dtype=float).reshape(2, 9)
    out = shift_images(X, 3, fill=-1.0)
    assert out.shape == (16, 9)
    down = out[SHIFTS_8.index((1, 0)) * 2].reshape(3, 3)  # image 0 moved one pixel down
    np.testing.assert_array_equal(down, [[-1, -1, -1], [0, 1, 2], [3, 4, 5]])
    right = out[SHIFTS_8.index((0, 1)) * 2 + 1].reshape(3, 3)  # image 1 moved right
    np.testing.assert_array_equal(right, [[-1, 9, 10], [-1, 12, 13], [-1, 15, 16]])
    upleft = out[SHIFTS_8.index((-1, -1)) * 2].reshape(3, 3)
    np.testing.assert_array_equal(upleft, [[4, 5, -1], [7, 8, -1], [-1, -1, -1]])
    # every shift keeps exactly the pixels that stay in the frame
    for k, (dr, dc) in enumerate(SHIFTS_8):
        img = out[2 * k].reshape(3, 3)
        assert (img == -1).sum() == 9 - (3 - abs(dr)) * (3 - abs(dc))


def test_shift_images_inverse_and_errors():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(5, 16))
    back = shift_images(shift_images(X, 4, [(0, 1)], fill=0.0), 4, [(0, -1)], fill=0.0)
    inner = back.reshape(5, 4, 4)[:, :, :3]  # the last column was lost at the border
    np.testing.assert_array_equal(inner, X.reshape(5, 4, 4)[:, :, :3])
    with pytest.raises(ValueError, match="shape"):
        shift_images(X, 5)
    with pytest.raises(ValueError, match="out of the frame"):
        shift_images(X, 4, [(4, 0)])


@pytest.mark.skipif(not datasets.data_available("usps"), reason="USPS files not present")
def test_load_usps_virtual_sizes():
    Xtr, ytr, Xte, yte = datasets.load_usps()
    Xv, yv, Xte2, yte2 = datasets.load_usps_virtual()
    assert Xv.shape == (65619, 256) and yv.shape == (65619,)
    np.testing.assert_array_equal(Xv[:7291], Xtr)
    np.testing.assert_array_equal(yv[7291 * 3:7291 * 4], ytr)
    np.testing.assert_array_equal(Xte2, Xte)
    np.testing.assert_array_equal(yte2, yte)
    assert Xv.min() >= -1.0 and Xv.max() <= 1.0


def test_shift_images_bad_input_is_named():
    """shift_images raised 'cannot unpack non-iterable int object' for a single pair given
    as shifts, 'slice indices must be integers' for a fractional shift, a reshape error
    for side=-4 (-4 * -4 = 16 passed the shape check)."""
    from sparsekm.datasets import shift_images

    X = np.arange(32, dtype=float).reshape(2, 16)
    for kw, match in ((dict(side=-4), "side"), (dict(side=4.0), "side"),
                      (dict(side=4, shifts=(1, 0)), "shifts must be a sequence"),
                      (dict(side=4, shifts=[(0.5, 0)]), "pair of ints"),
                      (dict(side=4, shifts=[(1,)]), "pair of ints"),
                      (dict(side=4, shifts=[(True, 0)]), "pair of ints")):
        with pytest.raises(ValueError, match=match):
            shift_images(X, **kw)
    down = shift_images(X, 4, [(1, 0)])  # still right: content one row down, -1 enters
    np.testing.assert_array_equal(down.reshape(2, 4, 4)[:, 1:], X.reshape(2, 4, 4)[:, :-1])
    assert np.all(down.reshape(2, 4, 4)[:, 0] == -1.0)
