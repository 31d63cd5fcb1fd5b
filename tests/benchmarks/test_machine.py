"""The machine description every benchmark's JSON carries: CPU flags, torch's view, load."""

from benchmarks import machine

CPUINFO = """processor\t: 0
model name\t: Example CPU
flags\t\t: fpu sse2 avx avx2 avx512f avx512bw
"""


def test_flags_are_read_from_cpuinfo_word_by_word():
    flags = machine.cpu_flags(CPUINFO)
    assert flags == {"avx2": True, "avx512f": True, "avx512_bf16": False, "amx_bf16": False}
    assert machine.cpu_model(CPUINFO) == "Example CPU"


def test_flags_are_unknown_without_a_flags_line():
    assert machine.cpu_flags("processor\t: 0\n") == dict.fromkeys(machine.FLAGS)


def test_the_description_names_the_hardware_and_the_load():
    described = machine.describe()
    assert set(described["cpu_flags"]) == set(machine.FLAGS)
    assert described["cores"] >= 1 and len(described["load_average_1_5_15"]) == 3
    assert described["torch_cpu_capability"] in {"DEFAULT", "AVX2", "AVX512", "NO AVX", "ZVECTOR", "VSX"}
    assert described["native_bf16"] == bool(described["cpu_flags"]["avx512_bf16"] or described["cpu_flags"]["amx_bf16"])
