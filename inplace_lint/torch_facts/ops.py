"""Op tables the engine reads: what writes in place, what makes a view, what is a model output.

The in-place tables are generated from torch (``python scripts/generate_ops.py`` writes
``_ops_generated.py`` beside this file); the view tables follow the PyTorch docs page "Tensor Views"
(https://pytorch.org/docs/stable/tensor_view.html) and the facts checked on torch 2.13 in
``docs/pytorch-facts.md`` (``#may-alias``, ``#saved-output``). Nothing here imports torch.
"""
from __future__ import annotations

from typing import Tuple

from ._ops_generated import (  # noqa: F401  (re-exported)
    FUNCTION_TWINS,
    FUNCTIONAL_INPLACE_FUNCTIONS,
    INPLACE_KWARG_FUNCTIONS,
    INPLACE_POSITION,
    INPLACE_KWARG_MODULES,
    METADATA_INPLACE_METHODS,
    NON_DATA_INPLACE_METHODS,
    OUT_OF_PLACE_TWINS,
    TENSOR_INPLACE_METHODS,
    TORCH_INPLACE_FUNCTIONS,
)
from ._saved_generated import SAVED_FOR_BACKWARD as _SAVED_FOR_BACKWARD
from ._saved_generated import SAVED_INDEX_INPUTS

#: Tensor methods (and ``torch.<name>(x, ...)`` functions) whose result is always a view of the input.
VIEW_METHODS = frozenset(
    {
        "view", "view_as", "squeeze", "unsqueeze", "transpose", "t", "permute", "narrow",
        "select", "diagonal", "unfold", "as_strided", "detach", "unflatten", "movedim",
        "moveaxis", "swapaxes", "swapdims", "adjoint", "view_as_real", "view_as_complex",
        "indices", "values", "crow_indices", "col_indices",
        "conj", "resolve_conj", "resolve_neg", "alias",
    }
)
#: Attributes that are views: ``x.T``, ``x.mT``, ``x.real`` ...; ``x.data`` shares storage and bypasses autograd.
VIEW_ATTRIBUTES = frozenset({"T", "mT", "H", "mH", "real", "imag", "data"})
#: May return the input itself or a view of it (when no copy is needed): they keep the origin.
MAY_ALIAS_METHODS = frozenset(
    {
        "reshape", "reshape_as", "flatten", "contiguous", "to", "type_as", "type", "float",
        "half", "bfloat16", "double", "cpu", "cuda", "requires_grad_",
    }
)
#: Multi-output view ops: each element is a view, and in-place on one raises when the base needs grad.
MULTI_VIEW_METHODS = frozenset({"split", "chunk", "unbind", "split_with_sizes"})
#: Ops that return a tuple of ordinary views made by slicing (``AsStridedBackward0`` on torch 2.13): an element
#: may be written with grad on, like ``x[a:b]``, and the write reaches the base (docs/pytorch-facts.md#multi-output-view)
SLICED_VIEW_METHODS = frozenset({"tensor_split", "hsplit", "vsplit", "dsplit"})
#: Views whose elements overlap in memory: in-place on them raises with or without grad.
EXPAND_METHODS = frozenset({"expand", "expand_as", "broadcast_to"})
#: Methods that return a DTensor's local tensor through a custom autograd Function
#: (``_ToTorchTensor`` in torch.distributed.tensor): in-place on the result raises under grad.
DTENSOR_LOCAL_METHODS = frozenset({"to_local", "full_tensor"})
#: THE operator table (one row per binary operator): symbol, the in-place Tensor method its augmented
#: assignment calls (``x /= t`` is ``x.div_(t)``, Python data model "Emulating numeric types"; None for
#: ``@=``, which has no in-place tensor method), the ``ast`` operator class name, and the dunder stem
#: (``__itruediv__``). Every operator map below is derived from it; nothing else spells these pairs.
OPERATORS = (
    ("+", "add_", "Add", "add"), ("-", "sub_", "Sub", "sub"), ("*", "mul_", "Mult", "mul"),
    ("/", "div_", "Div", "truediv"), ("//", "floor_divide_", "FloorDiv", "floordiv"),
    ("%", "remainder_", "Mod", "mod"), ("**", "pow_", "Pow", "pow"), ("&", "bitwise_and_", "BitAnd", "and"),
    ("|", "bitwise_or_", "BitOr", "or"), ("^", "bitwise_xor_", "BitXor", "xor"),
    ("<<", "bitwise_left_shift_", "LShift", "lshift"), (">>", "bitwise_right_shift_", "RShift", "rshift"),
    ("@", None, "MatMult", "matmul"),
)
#: Augmented assignment operator -> the in-place method it calls on a tensor (``x /= t`` is ``x.div_(t)``).
AUGMENTED_INPLACE = {sym + "=": method for sym, method, _, _ in OPERATORS if method}
#: ``ast`` operator class name -> augmented assignment symbol (``"Div"`` -> ``"/="``).
AST_AUGMENTED = {name: sym + "=" for sym, _, name, _ in OPERATORS}
#: augmented-assignment dunder -> in-place method (``__itruediv__`` -> ``div_``; ``__idiv__`` is Python 2's).
DUNDER_INPLACE = {f"__i{stem}__": method for _, method, _, stem in OPERATORS if method}
DUNDER_INPLACE["__idiv__"] = "div_"


def inplace_argument(func_name: str, positional: int, keywords) -> "int | str | None":
    """Where ``inplace`` is passed in a call of ``func_name`` (a ``torch.nn.functional`` name) with
    ``positional`` positional arguments and keyword names ``keywords``: ``"inplace"`` when passed by
    keyword, its position when passed positionally (:data:`INPLACE_POSITION`), else None. The one
    reading of the ``inplace`` parameter's position, for the analysis, fix planning and the codemod."""
    if "inplace" in keywords:
        return "inplace"
    position = INPLACE_POSITION.get(func_name)
    if position is not None and positional > position:
        return position
    return None


#: What each op's backward reads, generated from torch's derivative formulas (derivatives.yaml) by
#: ``python scripts/generate_saved.py``: ``"torch.cdist"`` / ``"Tensor.exp"`` -> (autograd nodes, the
#: output is read, positions of the inputs read when that input requires grad). Writing a tensor the
#: backward reads fails at backward (docs/pytorch-facts.md#saved-output, #saved-input).
SAVED_FOR_BACKWARD = _SAVED_FOR_BACKWARD
#: Namespace of a ``Tensor`` method in :data:`SAVED_FOR_BACKWARD`.
TENSOR_METHOD = "Tensor"


def saved_for_backward(namespace: str, name: str):
    """(autograd nodes, output read, input positions read) for ``namespace.name`` (``"Tensor"`` for a method,
    ``"torch.linalg"``, ``"torch.nn.functional"``, ...), or None when its backward reads none of them."""
    return SAVED_FOR_BACKWARD.get(f"{namespace}.{name}")


def saved_index_inputs(namespace: str, name: str) -> Tuple[Tuple[int, Tuple[int, ...]], ...]:
    """``((position, float positions), ...)``: the integer index or bool mask inputs of ``namespace.name`` its backward
    reads for the gradient of the float inputs at those positions (``x.gather(1, idx)``: ``idx``, for ``x``;
    ``torch.where(mask, a, b)``: ``mask``, for ``a`` and ``b``; ``F.nll_loss(x, target)``); position 0 is the
    receiver or first argument. Found by execution (scripts/generate_saved.py, ``INDEX_PATTERNS``); empty when none."""
    return SAVED_INDEX_INPUTS.get(f"{namespace}.{name}", ())


def saved_for_other(namespace: str, name: str) -> Tuple[int, ...]:
    """Positions of the inputs ``namespace.name``'s backward reads when only another input requires grad
    (``x`` in ``x * w``, ``torch.matmul(x, w)``, ``F.linear(x, w)``); empty when none."""
    entry = SAVED_FOR_BACKWARD.get(f"{namespace}.{name}")
    return entry[3] if entry else ()


#: ``torch.nn`` layers whose forward saves its input for the gradient of its weights, so that writing the
#: input in place after the layer ran with grad on makes the backward raise even when the input needs no grad
#: (each executed on torch 2.13 in tests/test_saved_table.py; ``nn.RMSNorm`` and ``nn.Dropout`` do not).
#: ``nn.Embedding`` saves its index tensor: a decoding loop that rewrites its token buffer after the embedding read a
#: slice of it (``input_var[:, di] = token`` after ``self.embedding(input_var[:, :di])``) raises at the backward when
#: it runs in training (openspeech's free-running transformer decoder, set CS); one run under a ``no_grad`` its
#: callers set saves nothing (the callers' grad mode is followed).
LAYERS_SAVING_INPUT = frozenset({
    "Linear", "Bilinear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
    "LayerNorm", "GroupNorm", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "PReLU", "LSTM", "GRU", "RNN", "Embedding",
    "MultiheadAttention", "LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d",
    "LazyConvTranspose2d", "LazyConvTranspose3d", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d",
})


#: ``torch.nn`` layers whose backward reads the input for the input's own gradient, so that one built without
#: weights that require grad (frozen, ``affine=False``) or padding first still saves an input that requires
#: grad: the norms need it for their statistics, a convolution's backward formula reads input and weight
#: together, and a reflect or replicate pad reads it (a circular pad copies). Not ``nn.Linear`` (its input's
#: gradient is ``grad @ weight``) nor the recurrent layers. Each executed on torch 2.13, train and eval:
#: tests/test_frozen_layers.py.
LAYERS_READING_OWN_INPUT = frozenset({
    "Bilinear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d", "LayerNorm",
    "GroupNorm", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d",
    "PReLU", "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d",
    "LazyConvTranspose3d", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d",
})


#: how many positional inputs a layer of :data:`LAYERS_SAVING_INPUT` saves (1 when not listed)
LAYER_INPUTS = {"Bilinear": 2, "MultiheadAttention": 3}


def saved_outputs(namespace: str, name: str) -> Tuple[int, ...]:
    """Positions of the outputs of a tuple-returning op (``torch.linalg.qr``: Q and R, ``torch.sort``: the
    indices) its backward reads; empty when none, or when the op returns one tensor."""
    entry = SAVED_FOR_BACKWARD.get(f"{namespace}.{name}")
    return entry[4] if entry else ()


def saves_output(namespace: str, name: str) -> bool:
    entry = SAVED_FOR_BACKWARD.get(f"{namespace}.{name}")
    return bool(entry and entry[1])


#: Bare names of the ops whose backward reads their own output, in any namespace (``exp``, ``cdist``,
#: ``softmax``, ``relu``, ...): in-place activations (``relu_``, ``nn.ReLU(inplace=True)``) and fix planning.
SAVES_OUTPUT = frozenset(k.rsplit(".", 1)[1] for k, v in SAVED_FOR_BACKWARD.items() if v[1])
#: In-place activations whose backward reads the output they wrote, though their out-of-place twin reads its
#: input (derivatives.yaml: ``leaky_relu_``, ``elu_``, ``rrelu_with_noise_`` use ``result``; ``selu``/``celu``
#: are ``elu``). Executed on torch 2.13: ``nn.LeakyReLU(inplace=True)``, ``ELU``, ``SELU``, ``CELU``, ``RReLU``
#: then ``out += 1`` raise at backward; ``Hardtanh``, ``ReLU6``, ``Threshold``, ``SiLU``, ``Mish``,
#: ``Hardswish``, ``Hardsigmoid`` and ``Dropout`` with ``inplace=True`` do not (docs/pytorch-facts.md#saved-output).
SAVES_OUTPUT_WHEN_INPLACE = SAVES_OUTPUT | frozenset({"leaky_relu", "elu", "selu", "celu", "rrelu"})
#: Methods a training framework runs with grad off, by the framework's base class (qualified as imported).
#: mmengine: ``ValLoop.run_iter`` and ``TestLoop.run_iter`` are ``@torch.no_grad()`` and call the model's
#: ``val_step``/``test_step``, which run ``forward(mode='predict')``, i.e. ``predict``
#: (https://mmengine.readthedocs.io/en/latest/tutorials/model.html; mmengine/runner/loops.py)
_MMENGINE_NO_GRAD = frozenset({"predict", "val_step", "test_step"})
#: mmengine's metrics: the same loops call a ``BaseMetric``'s ``process`` inside their ``@torch.no_grad()``
#: ``run_iter`` and, after the loop, ``evaluate`` (and so ``compute_metrics``) on the results ``process`` kept
#: (mmengine/runner/loops.py, ``ValLoop``/``TestLoop``): every tensor a metric holds was made with grad off
_MMENGINE_METRIC_NO_GRAD = frozenset({"process", "evaluate", "compute_metrics"})
FRAMEWORK_NO_GRAD_METHODS = {
    "mmengine.model.BaseModel": _MMENGINE_NO_GRAD,
    "mmengine.model.base_model.BaseModel": _MMENGINE_NO_GRAD,
    "mmengine.model.base_model.base_model.BaseModel": _MMENGINE_NO_GRAD,
    "mmengine.evaluator.BaseMetric": _MMENGINE_METRIC_NO_GRAD,
    "mmengine.evaluator.metric.BaseMetric": _MMENGINE_METRIC_NO_GRAD,
}
#: ``torch.nn`` layers with learnable weights (by default) whose call returns one new tensor: in training their
#: output requires grad (the weights do), whatever the input; a multi-output view of it (``self.qkv(x).chunk(3)``)
#: then raises when written in place (docs/pytorch-facts.md#multi-output-view). Not the recurrent layers or
#: ``MultiheadAttention`` (tuples), nor ``InstanceNorm*`` (no affine weights by default)
WEIGHTED_LAYERS = frozenset({
    "Linear", "Bilinear", "LazyLinear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
    "ConvTranspose3d", "LazyConv1d", "LazyConv2d", "LazyConv3d", "Embedding", "EmbeddingBag", "BatchNorm1d",
    "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm", "LayerNorm", "GroupNorm", "RMSNorm", "PReLU",
})
#: what the ``__init__`` of torch's transformer layers and attention builds on ``self`` (torch/nn/modules/transformer.py,
#: activation.py; torch 2.x): a subclass that does not build the attribute itself holds these layers and parameters
#: (without torch's ``__init__`` it would have no such attribute; ``q_proj_weight`` and the others where
#: ``kdim``/``vdim`` differ from the embedding's)
TORCH_LAYER_ATTRIBUTES = {
    "MultiheadAttention": {"in_proj_weight": "Parameter", "in_proj_bias": "Parameter", "q_proj_weight": "Parameter",
                           "k_proj_weight": "Parameter", "v_proj_weight": "Parameter", "out_proj": "Linear"},
    "TransformerEncoderLayer": {"self_attn": "MultiheadAttention", "linear1": "Linear", "linear2": "Linear",
                                "norm1": "LayerNorm", "norm2": "LayerNorm", "dropout": "Dropout",
                                "dropout1": "Dropout", "dropout2": "Dropout"},
    "TransformerDecoderLayer": {"self_attn": "MultiheadAttention", "multihead_attn": "MultiheadAttention",
                                "linear1": "Linear", "linear2": "Linear", "norm1": "LayerNorm", "norm2": "LayerNorm",
                                "norm3": "LayerNorm", "dropout": "Dropout", "dropout1": "Dropout",
                                "dropout2": "Dropout", "dropout3": "Dropout"},
}
#: ``torch.nn.init`` functions: each fills its argument in place and returns it
#: (https://pytorch.org/docs/stable/nn.init.html)
INIT_FUNCTIONS = frozenset({"uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_", "eye_", "dirac_",
                            "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_",
                            "orthogonal_", "sparse_"})
#: ``nn`` activation classes by the function they run in place
ACTIVATION_FUNCTIONS = {"ReLU": "relu", "LeakyReLU": "leaky_relu", "ELU": "elu", "SELU": "selu", "CELU": "celu",
                        "RReLU": "rrelu", "Sigmoid": "sigmoid", "Tanh": "tanh"}
#: ``torch.nn`` modules that compute one ``torch.nn.functional`` op on their input: a module's output is that
#: op's (whether its backward reads the output is the saved table's answer for the op)
MODULE_FUNCTIONALS = {**ACTIVATION_FUNCTIONS, "Softmax": "softmax", "LogSoftmax": "log_softmax",
                      "Softmin": "softmin", "GELU": "gelu", "SiLU": "silu", "Softplus": "softplus",
                      "Hardtanh": "hardtanh", "ReLU6": "relu6", "Mish": "mish", "LogSigmoid": "logsigmoid",
                      "Hardsigmoid": "hardsigmoid", "Hardswish": "hardswish"}
#: activations whose output is their input where the input is not negative (``relu(relu(x)) == relu(x)``)
POSITIVE_IDENTITY = frozenset({"ReLU", "LeakyReLU", "ELU", "CELU", "RReLU"})
#: functional ops (and ``torch_stacks`` endings) whose output is never negative
NON_NEGATIVE_OPS = frozenset({"relu", "relu_", "sigmoid", "sigmoid_", "softmax", "exp", "exp_", "abs", "abs_",
                              "square", "softplus", "hardsigmoid", "relu6"})
#: ``torch.nn`` layers whose output elements are elements, means or maxima of their input (or their input scaled by a
#: positive factor: dropout): a non-negative input stays non-negative (a ReLU after them changes nothing)
SIGN_KEEPING_LAYERS = frozenset({"MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d",
                                 "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveMaxPool3d", "AdaptiveAvgPool1d",
                                 "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "Identity", "Flatten", "Dropout",
                                 "Dropout1d", "Dropout2d", "Dropout3d", "Upsample", "PixelShuffle"})
#: Of those, the method names that are taken as a tensor's even when nothing proves the receiver a tensor
#: (``logits.softmax(-1)``); the others (``norm``, ``std``, ``det``, ``solve``, ...) need a receiver known
#: to be a tensor or a parameter: ``self.norm(h)`` is a LayerNorm submodule, not ``Tensor.norm``.
SAVES_OUTPUT_ANY_RECEIVER = frozenset({"exp", "sigmoid", "tanh", "softmax", "log_softmax", "relu", "sqrt",
                                       "rsqrt", "logsumexp"})
#: the integer and bool dtypes (``torch.long``, ...): a tensor of one never requires grad (PyTorch docs, Autograd
#: mechanics: only floating point and complex tensors can require gradients)
INTEGER_DTYPES = frozenset({"long", "int", "int64", "int32", "int16", "int8", "uint8", "short", "bool", "uint16",
                            "uint32", "uint64"})
#: ``torch.<name>(...)`` factories: a fresh tensor that needs no grad unless ``requires_grad=True``.
FACTORY_FUNCTIONS = frozenset(
    {
        "zeros", "ones", "empty", "full", "arange", "linspace", "logspace", "rand", "randn",
        "randint", "randperm", "eye", "tensor", "as_tensor", "zeros_like", "ones_like",
        "empty_like", "full_like", "rand_like", "randn_like", "randint_like", "empty_strided",
        "from_numpy", "frombuffer",
    }
)
#: ``x.new_<kind>(...)``: a factory's tensor (new storage, no grad unless ``requires_grad=True``) whatever ``x``
#: is, with ``x``'s dtype and device (PyTorch docs: ``torch.Tensor.new_empty`` and its siblings)
FACTORY_METHODS = frozenset({"new_zeros", "new_ones", "new_empty", "new_full", "new_tensor"})
#: tensor methods whose result has a storage of its own (only a tensor has them)
OWN_STORAGE_METHODS = FACTORY_METHODS | {"clone"}
#: factories that return a tensor sharing the storage of what they are given when they can (a numpy array, a
#: buffer, a tensor of the right dtype and device): no grad, but not a storage of their own
#: (PyTorch docs: ``torch.from_numpy``, ``torch.as_tensor``, ``torch.asarray``, ``torch.frombuffer``)
SHARING_FACTORIES = frozenset({"as_tensor", "asarray", "from_numpy", "frombuffer", "from_dlpack", "atleast_1d",
                               "atleast_2d", "atleast_3d"})
#: Context managers and decorators that turn grad mode off (``torch.no_grad()``, ...).
NO_GRAD_CONTEXTS = frozenset({"no_grad", "inference_mode"})
#: ``set_grad_enabled(False)`` turns grad off; ``enable_grad()`` turns it back on.
SET_GRAD_CONTEXT = "set_grad_enabled"
ENABLE_GRAD_CONTEXT = "enable_grad"

# Defaults for the configurable model-output heuristics.
#: Not ``loss``: a loss is a reduction's fresh 0-dim result, so ``outputs.loss += reg`` neither raises
#: nor surprises a reader (adding a regulariser to the returned loss is the intent; peft's AdaLoRA).
DEFAULT_MODEL_OUTPUT_FIELDS = (
    "logits", "last_hidden_state", "hidden_states", "log_probs", "logprobs",
    "entropy", "attentions", "pooler_output", "prediction_logits", "start_logits",
    "end_logits", "vpreds", "value_preds",
)
#: Names whose attributes in ``DEFAULT_MODEL_OUTPUT_FIELDS`` are model outputs, and
#: parameter names that hold a model's output object.
DEFAULT_MODEL_OUTPUT_NAMES = ("output", "outputs", "model_output", "model_outputs", "model_out", "out", "outs")
DEFAULT_MODEL_OUTPUT_PARAMS = ("output", "outputs", "model_output", "model_outputs")
#: fnmatch patterns for the last name of a callee whose call result is a model output.
DEFAULT_MODEL_CALL_PATTERNS = (
    "model", "*_model", "module", "*_module", "policy", "actor", "critic", "lm_head",
    "*_head", "backbone", "transformer", "net", "*_net", "engine_model",
)

#: Tensor methods and torch functions whose result is a new tensor computed from their inputs: it needs
#: grad only if an input does (so on tensors that need no grad, the result needs none either).
ARITHMETIC = frozenset(
    {
        "add", "sub", "mul", "div", "pow", "neg", "abs", "log", "log1p", "log2", "log10", "expm1", "lerp",
        "clamp", "clip", "clamp_min", "clamp_max", "cumsum", "cumprod", "flip", "roll", "sum", "mean",
        "prod", "square", "reciprocal", "sin", "cos", "atan2", "floor", "ceil", "round", "where",
        "cat", "stack", "diff", "maximum", "minimum", "matmul", "outer", "repeat", "tile", "sign",
        # the functional forms of torch's layers, and products: a new tensor from their input and weights
        "linear", "bilinear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
        "conv_transpose3d", "mm", "bmm", "einsum", "addmm", "baddbmm",
    }
)
