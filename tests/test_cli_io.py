"""The command line's data I/O (``sparsekm.cli.read_matrix``/``write_matrix`` and the
input checks): every output format reads back to the numbers written, headers and pandas
index columns are recognised, and files that are not tables of numbers are refused with a
message naming the file and what it is."""

import json
import pickle
import warnings
import zipfile

import numpy as np
import pytest

from sparsekm.cli import (
    CLIError,
    check_input_file,
    check_output_path,
    read_key_file,
    read_matrix,
    write_matrix,
)


@pytest.fixture
def table():
    # values that %.6g or float32 would change: the round trips must keep every bit
    rng = np.random.default_rng(3)
    return rng.normal(size=(5, 3)) * np.array([1e-7, 1.0, 3e5]) + np.pi


def _round_trip(tmp_path, name, Y):
    path = tmp_path / name
    write_matrix(path, Y)
    return path, read_matrix(path)


@pytest.mark.parametrize("name", ["out.npy", "out.csv", "out.txt"])
def test_a_written_table_reads_back_bit_for_bit(tmp_path, table, name):
    # .npy stores the array; .csv and .txt print 17 significant digits, enough for float64
    _, back = _round_trip(tmp_path, name, table)
    np.testing.assert_array_equal(back, table)


def test_csv_is_comma_separated_and_txt_space_separated(tmp_path):
    Y = np.array([[1.5, -2.0], [0.25, 4.0]])
    write_matrix(tmp_path / "a.csv", Y)
    write_matrix(tmp_path / "a.txt", Y)
    assert (tmp_path / "a.csv").read_text().splitlines() == ["1.5,-2", "0.25,4"]
    assert (tmp_path / "a.txt").read_text().splitlines() == ["1.5 -2", "0.25 4"]


def test_json_holds_one_value_per_row_and_labels_as_strings(tmp_path):
    write_matrix(tmp_path / "v.json", np.array([0.5, -1.0, 2.0]))
    assert json.loads((tmp_path / "v.json").read_text()) == [0.5, -1.0, 2.0]
    write_matrix(tmp_path / "r.json", np.array([[1, 2], [3, 4]]))
    assert json.loads((tmp_path / "r.json").read_text()) == [[1, 2], [3, 4]]
    write_matrix(tmp_path / "l.json", np.array(["cat", "dog"], dtype=object))
    assert json.loads((tmp_path / "l.json").read_text()) == ["cat", "dog"]


def test_npy_of_string_labels_loads_without_pickle(tmp_path):
    write_matrix(tmp_path / "l.npy", np.array(["cat", "dog"], dtype=object))
    back = np.load(tmp_path / "l.npy", allow_pickle=False)
    assert back.dtype.kind == "U" and back.tolist() == ["cat", "dog"]


def test_a_one_dimensional_result_is_a_column_in_csv(tmp_path):
    write_matrix(tmp_path / "c.csv", np.array([1.0, 2.0, 3.0]))
    assert read_matrix(tmp_path / "c.csv").shape == (3, 1)


def test_write_matrix_refuses_an_unknown_extension(tmp_path):
    with pytest.raises(ValueError, match=r"unknown output format '\.xlsx'"):
        write_matrix(tmp_path / "out.xlsx", np.ones((2, 2)))
    assert not (tmp_path / "out.xlsx").exists()


def test_output_path_checks_are_usage_errors_naming_the_extension(capsys):
    with pytest.raises(SystemExit) as exc:
        check_output_path("result.parquet")
    assert exc.value.code == 2
    assert "unknown output format '.parquet'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        check_output_path("result", option="--output")
    err = capsys.readouterr().err
    assert "--output result" in err and "(no extension)" in err
    check_output_path("RESULT.CSV")  # the extension's case does not matter


def test_a_header_line_of_names_is_skipped(tmp_path):
    (tmp_path / "h.csv").write_text("width,height\n1,2\n3,4\n")
    np.testing.assert_array_equal(read_matrix(tmp_path / "h.csv"), [[1, 2], [3, 4]])


def test_whitespace_separated_text_is_read(tmp_path):
    (tmp_path / "w.txt").write_text("1 2   3\n4\t5 6\n")
    np.testing.assert_array_equal(read_matrix(tmp_path / "w.txt"), [[1, 2, 3], [4, 5, 6]])


def test_index_col_drops_the_first_column(tmp_path):
    (tmp_path / "i.csv").write_text("7,1.5,2\n9,3,4\n")
    np.testing.assert_array_equal(read_matrix(tmp_path / "i.csv", index_col=True),
                                  [[1.5, 2], [3, 4]])


def test_pandas_to_csv_with_its_index_reads_as_the_frame(tmp_path):
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"a": [0.5, 1.5, 2.5], "b": [-1.0, 0.0, 7.25]})
    frame.to_csv(tmp_path / "f.csv")  # ",a,b" over an index 0, 1, 2
    notes = []
    X = read_matrix(tmp_path / "f.csv", note=notes.append)
    np.testing.assert_array_equal(X, frame.to_numpy())
    assert len(notes) == 1 and "pandas index" in notes[0] and "f.csv" in notes[0]


def test_pandas_default_column_names_are_a_header_over_real_numbers(tmp_path):
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(np.array([[0.5, 1.0, 2.0], [3.0, 4.5, 5.0]]))
    frame.to_csv(tmp_path / "d.csv", index=False)  # first line "0,1,2"
    notes = []
    X = read_matrix(tmp_path / "d.csv", note=notes.append)
    np.testing.assert_array_equal(X, frame.to_numpy())
    assert len(notes) == 1 and "column names" in notes[0]


def test_a_first_row_0_1_2_over_whole_numbers_is_data(tmp_path):
    # over integer rows "0,1,2" may be a data row: it is kept, with no note
    (tmp_path / "n.csv").write_text("0,1,2\n3,4,5\n")
    notes = []
    X = read_matrix(tmp_path / "n.csv", note=notes.append)
    np.testing.assert_array_equal(X, [[0, 1, 2], [3, 4, 5]])
    assert notes == []


@pytest.mark.parametrize("name, text, match", [
    ("nan.csv", "1,2\nnan,3\n", r"nan\.csv contains NaN"),
    ("rag.csv", "1,2\n3\n", r"could not read .*rag\.csv as a numeric table"),
    ("t.npy", "1,2\n3,4\n", r"could not read .*t\.npy as a \.npy array"),
], ids=["nan", "ragged", "text-named-npy"])
def test_a_file_that_is_no_table_of_numbers_is_refused_naming_it(tmp_path, name, text, match):
    (tmp_path / name).write_text(text)
    with pytest.raises(ValueError, match=match):
        read_matrix(tmp_path / name)


def test_a_one_dimensional_npy_is_refused_with_its_shape(tmp_path):
    np.save(tmp_path / "v.npy", np.arange(3.0))
    with pytest.raises(ValueError, match=r"must be a 2-D array .* got shape \(3,\)"):
        read_matrix(tmp_path / "v.npy")


def test_an_empty_file_is_refused(tmp_path):
    (tmp_path / "e.csv").write_text("")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's "input contained no data" does not leak
        with pytest.raises(ValueError, match=r"e\.csv is empty"):
            read_matrix(tmp_path / "e.csv")


def test_a_zip_given_as_data_is_called_a_model_file(tmp_path):
    with zipfile.ZipFile(tmp_path / "m.csv", "w") as zf:
        zf.writestr("x", "y")
    with pytest.raises(CLIError, match="looks like a model file") as exc:
        read_matrix(tmp_path / "m.csv")
    assert "the model first, then the data" in str(exc.value)


def test_a_pickle_given_as_data_is_called_a_model_file(tmp_path):
    (tmp_path / "p.npy").write_bytes(pickle.dumps({"a": 1}, protocol=4))
    with pytest.raises(CLIError, match=r"a pickle \(e\.g\. a joblib-saved model\)"):
        read_matrix(tmp_path / "p.npy")


def test_other_binary_data_is_not_called_a_model(tmp_path):
    (tmp_path / "b.csv").write_bytes(b"1,2\n\x00\x01\x02\n")
    with pytest.raises(CLIError, match=r"looks like a binary file \(binary data\)") as exc:
        read_matrix(tmp_path / "b.csv")
    assert "model first" not in str(exc.value)
    (tmp_path / "l.csv").write_bytes("1,2\n\xe9t\xe9,3\n4,5\n".encode("latin-1"))
    with pytest.raises(CLIError, match=r"not UTF-8 text"):
        read_matrix(tmp_path / "l.csv")


def test_a_missing_file_and_a_folder_are_named(tmp_path):
    with pytest.raises(CLIError, match=r"data file .*nope\.csv: no such file"):
        check_input_file(str(tmp_path / "nope.csv"), "data file")
    with pytest.raises(CLIError, match=r"--train .* is a folder; give a file"):
        check_input_file(str(tmp_path), "--train")


def test_key_file_loses_one_line_ending_only(tmp_path):
    assert read_key_file(None) is None
    (tmp_path / "k1").write_bytes(b"s3cret\r\n")
    assert read_key_file(str(tmp_path / "k1")) == b"s3cret"
    (tmp_path / "k2").write_bytes(b"s3cret\n\n")  # the key's own newline is kept
    assert read_key_file(str(tmp_path / "k2")) == b"s3cret\n"


def test_key_file_empty_or_huge_is_refused(tmp_path):
    (tmp_path / "e").write_bytes(b"\n")
    with pytest.raises(ValueError, match="is empty"):
        read_key_file(str(tmp_path / "e"))
    (tmp_path / "big").write_bytes(b"k" * ((1 << 16) + 1))
    with pytest.raises(ValueError, match="larger than 64 KiB"):
        read_key_file(str(tmp_path / "big"))

