"""The CV-column counts of the table reproductions (no fitting)."""

from reproductions.experiments.gamma_cv import cv_count, cv_reduced_note


def test_cv_count_defaults_and_overrides():
    assert cv_count("iris", None, None, False) == 5
    assert cv_count("a1a", None, None, False) == 3
    assert cv_count("a1a", None, None, True) == 1
    assert cv_count("iris", 2, None, False) == 2
    assert cv_count("a1a", 2, None, False) == 2
    # adult_cv_reps touches the adult sets only; a mapping names them one by one
    assert cv_count("iris", None, 1, False) == 5
    assert cv_count("a6a", None, 1, False) == 1
    assert cv_count("a6a", None, {"a6a": 0}, False) == 0
    assert cv_count("a1a", None, {"a6a": 0}, False) == 3


def test_cv_reduced_note_names_the_short_sets():
    assert cv_reduced_note({"iris": 5, "a1a": 3}, False) == ""
    assert cv_reduced_note({"iris": 1}, True) == ""
    note = cv_reduced_note({"iris": 5, "a1a": 1, "a6a": 0}, False)
    assert "Reduced run" in note and "a1a 1" in note and "a6a 0" in note
    assert "iris" not in note
