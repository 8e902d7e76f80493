"""Reports how many fault-matrix cases ran (tests/faults/test_fault_matrix.py)."""


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    import sys
    mod = next((m for name, m in list(sys.modules.items())
                if name.endswith("test_fault_matrix") and hasattr(m, "CASES")), None)
    if mod is None or not getattr(mod, "CASES", None):
        return
    tr = terminalreporter
    mode = "full" if mod.FULL else f"reduced (seed {mod.SEED})"
    total = sum(mod.CASES.values())
    tr.write_sep("-", f"fault matrix: {total} cases, {mode}")
    for m, n in sorted(mod.CASES.items()):
        tr.write_line(f"  {m:12s} {n}")
    for reason, n in sorted(mod.KNOWN_BUG_CASES.items()):
        tr.write_line(f"  known bug, {n} case(s): {reason}")
