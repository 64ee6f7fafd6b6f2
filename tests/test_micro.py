import pytest

from cuzk.backend import gpu_status
from cuzk.micro import floor_s


def test_floors_follow_design():
    assert floor_s("ntt", 27, 0) == pytest.approx(0.030)
    assert floor_s("ntt", 26, 0) == pytest.approx(0.030 * 26 / 27 / 2)
    assert floor_s("h", 27, 0, "coeff") == pytest.approx(7 * 0.030)
    assert floor_s("fp_mul", 0, int(2.8e10)) == pytest.approx(1.0)


@pytest.mark.skipif(gpu_status()[0], reason="a GPU is present")
def test_micro_without_gpu_exits_2(capsys):
    pytest.importorskip("pyperf")
    from cuzk.cli import main
    assert main(["micro", "ntt", "--log-size", "10"]) == 2
    assert "needs a GPU" in capsys.readouterr().err


def test_msm_floor():
    assert floor_s("msm", 26, 0) == pytest.approx(0.26)
