"""The key core: one grouping and one label rule for the capture, the prediction and the check."""

from torchlens.analysis.keys import LayerKey, call_label, group_keys, layer_labels, pass_label


def test_equal_keys_are_passes_of_one_layer_in_order_of_first_occurrence():
    grouping = group_keys(["a", "b", "a", "c", "b", "a"])
    assert grouping.layer_of == (0, 1, 0, 2, 1, 0)
    assert grouping.pass_of == (1, 1, 2, 1, 2, 3)
    assert grouping.first == (0, 1, 3)
    assert grouping.members() == [[0, 2, 5], [1, 4], [3]]


def test_labels_count_layers_per_op_name_in_order():
    assert layer_labels(["linear", "relu", "linear", "add", "relu"]) == [
        "linear_1", "relu_1", "linear_2", "add_1", "relu_2"]
    assert pass_label("linear_2", 3) == "linear_2:3"
    assert call_label("blocks.0", 2) == "blocks.0:2"


def test_a_layer_key_equals_the_plain_tuple_of_its_fields():
    key = LayerKey("self", None, "add", 0)
    assert key == ("self", None, "add", 0) and hash(key) == hash(("self", None, "add", 0))
