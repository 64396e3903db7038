"""The checked-in generated protobuf code matches proto/."""

from verifier_service import codegen


def test_generated_code_is_up_to_date():
    assert codegen.stale_files() == [], "run `python -m verifier_service.codegen`"


def test_check_detects_a_stale_file(tmp_path, monkeypatch):
    for path in codegen.OUT_DIR.iterdir():
        if path.is_file():
            (tmp_path / path.name).write_text(path.read_text())
    (tmp_path / "verifier_pb2.py").write_text("# edited by hand\n")
    monkeypatch.setattr(codegen, "OUT_DIR", tmp_path)
    assert codegen.stale_files() == ["verifier_pb2.py"]
    assert codegen.main(["--check"]) == 1
