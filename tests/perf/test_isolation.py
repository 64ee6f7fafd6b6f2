"""What on a runner can slow a worker's samples out of the gate's sight (isolation.py), and the report's line."""
from __future__ import annotations

import os

import pytest

from cuzk.perf import gate, report
from cuzk.perf.isolation import cpu_list, device_interrupts_on, exposure

INTERRUPTS = """\
           CPU0       CPU1       CPU2
  0:         40          0          0   IO-APIC   2-edge      timer
 36:          0    3556221          0   PCI-MSIX-0000:00:02.0   1-edge      virtio1-req.0
 38:        500         12          0   PCI-MSIX-0000:00:03.0   1-edge      virtio2-input.0
 40:          0          0         90   PCI-MSIX-0000:00:04.0   1-edge      nvidia
 41:          0        700          0   PCI-MSIX-0000:00:05.0   2-edge      nvme0q2
LOC:     100000     100000     100000   Local timer interrupts
RES:         10         20         30   Rescheduling interrupts
"""


def _proc(tmp_path, affinity: dict[str, str]):
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "interrupts").write_text(INTERRUPTS)
    for irq, cpus in affinity.items():
        (tmp_path / "irq" / irq).mkdir(parents=True)
        (tmp_path / "irq" / irq / "effective_affinity_list").write_text(cpus + "\n")
    return str(tmp_path)


def test_cpu_lists():
    assert cpu_list("0-3,8\n") == {0, 1, 2, 3, 8} and cpu_list("") == set() and cpu_list("x") == set()


def test_device_interrupts_served_on_the_sampling_cpu_are_named_busiest_first(tmp_path):
    proc = _proc(tmp_path, {"0": "0", "36": "1", "38": "0-1", "40": "2", "41": "1"})
    got = device_interrupts_on((1,), proc)
    assert got == ["virtio1-req.0 (irq 36, 3556221 served there so far)",
                   "virtio2-input.0 (irq 38, 12 served there so far)"]
    # the local timer and the IPIs are not devices'; a line routed elsewhere since is let be; an NVMe queue of the
    # sampling CPU answers only its own requests
    assert device_interrupts_on((2,), _proc(tmp_path / "b", {"40": "0"})) == []
    assert device_interrupts_on((0,), proc) == ["virtio2-input.0 (irq 38, 500 served there so far)",
                                                "timer (irq 0, 40 served there so far)"]


def test_exposure_names_interrupts_and_root_and_nothing_on_an_isolated_runner(tmp_path):
    proc = _proc(tmp_path, {"36": "1", "38": "0"})
    lines = exposure((1,), proc, euid=0)
    assert len(lines) == 2 and "virtio1-req.0" in lines[0] and "sampling CPU (1)" in lines[0]
    assert "runs as root" in lines[1]
    assert exposure((2,), proc, euid=1000) == []
    assert exposure(None, proc, euid=1000) == []         # not pinned: no one sampling CPU to read


def test_the_report_says_the_runner_is_not_isolated_and_gate_json_keeps_it():
    from test_foreign_work import _doc, _rounds
    doc = _doc(_rounds(lambda s, r, i: 0.0), threshold=0.05)
    assert "not isolated" not in report.markdown(gate.from_dict(doc))
    doc["isolation"] = ["the gate runs as root: ..."]
    res = gate.from_dict(doc)
    assert res.isolation == doc["isolation"] and res.as_dict()["isolation"] == doc["isolation"]
    md = report.markdown(res)
    assert "**This runner is not isolated**: the gate runs as root" in md
    doc["isolation"] = [3]
    with pytest.raises(ValueError, match="isolation"):
        gate.from_dict(doc)



def test_device_interrupts_are_counted_on_the_sampling_cpu_only(tmp_path):
    from cuzk.perf.isolation import device_interrupt_count
    proc = _proc(tmp_path, {"41": "1"})
    assert device_interrupt_count((1,), proc) == 3556221 + 12            # nvme0q2 (CPU 1's own queue) left out
    assert device_interrupt_count((0, 2), proc) == 40 + 500 + 90
    assert device_interrupt_count(None, proc) is None and device_interrupt_count((1,), str(tmp_path / "no")) is None


def test_the_report_shows_the_interrupts_beside_each_side_and_gate_json_checks_them():
    from test_foreign_work import _doc, _rounds
    rounds = _rounds(lambda s, r, i: 0.0)
    md = report.markdown(gate.from_dict(_doc(rounds, threshold=0.05)))
    assert "Device interrupts served on the sampling CPU" not in md
    for rd in rounds:
        rd["base"]["areas"]["tail_msm"]["irqs"] = [4] * 9          # 40 us of a 10 ms sample: under the rule
        rd["head"]["areas"]["tail_msm"]["irqs"] = [0] * 8 + [3]
    md = report.markdown(gate.from_dict(_doc(rounds, threshold=0.05)))
    assert "`tail_msm` 4 / 4; 0 / 3" in md
    rounds[0]["base"]["areas"]["tail_msm"]["irqs"][0] = -1
    with pytest.raises(ValueError, match="irqs is not a list of counts"):
        gate.from_dict(_doc(rounds, threshold=0.05))


def test_an_nvme_queue_shared_with_other_cpus_is_counted(tmp_path):
    """Fewer NVMe queues than CPUs: a queue serves several, and a request made on another CPU of its set may be
    answered on the sampling CPU. Only a queue that may be served on the sampling CPUs alone (its own requests)
    is left out; one whose CPUs cannot be read is counted."""
    from cuzk.perf.isolation import device_interrupt_count
    (tmp_path / "irq" / "41").mkdir(parents=True)
    (tmp_path / "irq" / "41" / "smp_affinity_list").write_text("0-1\n")
    (tmp_path / "irq" / "41" / "effective_affinity_list").write_text("1\n")
    (tmp_path / "interrupts").write_text(INTERRUPTS)
    proc = str(tmp_path)
    assert device_interrupt_count((1,), proc) == 3556221 + 12 + 700
    assert any(x.startswith("nvme0q2 (irq 41") for x in device_interrupts_on((1,), proc))
    assert device_interrupt_count((1,), _proc(tmp_path / "b", {})) == 3556221 + 12 + 700    # unread: counted
    assert device_interrupt_count((1,), _proc(tmp_path / "c", {"41": "1"})) == 3556221 + 12


def test_the_hypervisors_steal_is_read_per_sampling_cpu(tmp_path):
    """/proc/stat's eighth figure of a CPU's line, in clock ticks: the sampling CPUs' summed, as ns; None where a
    CPU's line is missing or no CPU is pinned."""
    from cuzk.perf.isolation import steal_ns
    (tmp_path / "stat").write_text("cpu  10 0 5 900 1 0 2 30 0 0\n"
                                   "cpu0 5 0 2 450 1 0 1 12 0 0\n"
                                   "cpu1 5 0 3 450 0 0 1 18 0 0\n"
                                   "intr 1 2 3\n")
    tick = 1_000_000_000 // os.sysconf("SC_CLK_TCK")
    assert steal_ns((1,), str(tmp_path)) == 18 * tick
    assert steal_ns((0, 1), str(tmp_path)) == 30 * tick
    assert steal_ns((2,), str(tmp_path)) is None and steal_ns(None, str(tmp_path)) is None
    assert steal_ns((0,), str(tmp_path / "no")) is None
