import retain


def test_all_is_sorted_and_complete():
    assert retain.__all__ == sorted(retain.__all__)
    for name in retain.__all__:
        assert hasattr(retain, name), name


def test_public_classes_are_exported_once():
    assert len(set(retain.__all__)) == len(retain.__all__)
