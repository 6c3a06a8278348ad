"""The log our emitter writes for a scripted closed-division ResNet-50 run must
pass the official compliance checker under rulesets 3.0.0 and 4.0.0, and a
copy with the target missed must fail (so the check can fail at all).

usage: check_resnet_fixture.py RESNET_RUN_FIXTURE_BINARY
"""
import os
import subprocess
import sys
import tempfile


def official(log, ruleset, tmp):
    run = subprocess.run(
        [sys.executable, "-m", "mlperf_logging.compliance_checker", "--usage", "training",
         "--ruleset", ruleset, "--log_output", os.path.join(tmp, "cc.log"), log],
        capture_output=True, text=True, cwd=tmp, timeout=120)
    return run.returncode, run.stderr


def main():
    passed = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "result_0.txt")
        subprocess.run([sys.argv[1], log], check=True)
        with open(log) as f:
            text = f.read()
        missed = os.path.join(tmp, "missed.txt")
        with open(missed, "w") as f:
            f.write(text.replace('"value": 0.7601', '"value": 0.7589'))
        for ruleset in ("3.0.0", "4.0.0"):
            for path, want in ((log, 0), (missed, 1)):
                code, err = official(path, ruleset, tmp)
                if code == want:
                    passed += 1
                else:
                    failed += 1
                    print(f"{ruleset} {os.path.basename(path)}: exit {code}, wanted {want}\n{err}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
