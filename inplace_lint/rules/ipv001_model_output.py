"""IPV001: in-place op on a model output or on a view of one."""
from ..findings import Origin, RootKind
from .base import Rule


def applies(origin: Origin) -> bool:
    # a model output made with grad off needs no grad: writing it later cannot raise (facts l1)
    return origin.root in (RootKind.MODEL_OUTPUT, RootKind.MODEL_OUTPUT_OBJECT) and origin.is_tensor \
        and not origin.root_no_grad


RULE = Rule(
    code="IPV001",
    name="inplace-on-model-output",
    summary="In-place op on a model output (`output.logits`, `outputs[0]`) or a view of one.",
    advice=(
        "this raises when the model output comes from a custom autograd Function "
        "(e.g. a tensor-parallel head) and changes the output for every other reader; "
        "use an out-of-place op"
    ),
    applies=applies,
    what=(
        "Finds in-place writes (`*_` methods, `/=`-style augmented assignment, `x[i] = v`, "
        "`inplace=True`, `out=`) whose target is a model's output or reaches it through view "
        "ops (`.squeeze`, `.view`, slicing, ...) or ops that may return their input "
        "(`.float()`, `.contiguous()`, `.reshape()`, `.to()`). Model outputs are results of "
        "module calls (`model(...)`, `self.actor_module(...)`), their fields (`.logits`, "
        "`.last_hidden_state`, ...) and items (`outputs[0]`); the names are configurable."
    ),
    why=(
        "A view shares storage and version counter with its base. When the model's logits "
        "were made inside a custom `torch.autograd.Function` (fused kernels; tensor-parallel "
        "heads, whose `DTensor.to_local()` is one), the in-place op raises `RuntimeError: "
        "Output 0 of ... is a view and is being modified inplace. This view was created inside "
        "a custom Function ...`. Where autograd does not object, the write silently changes "
        "`output.logits` for every later reader (e.g. logits divided twice by the temperature). "
        "This is the verl FSDP temperature-scaling crash (verl PR 6935). On a slice of logits "
        "it also keeps a full-size `CopySlices` gradient buffer alive (TRL #6553)."
    ),
    example="""
logits_rmpad = output.logits.squeeze(0)
logits_rmpad.div_(temperature.clamp(min=1e-8).unsqueeze(-1).to(logits_rmpad.dtype))
""",
    use_instead="""
logits_rmpad = output.logits.squeeze(0)
if isinstance(logits_rmpad, DTensor):
    logits_rmpad = logits_rmpad.full_tensor()
logits_rmpad = logits_rmpad / temperature.clamp(min=1e-8).unsqueeze(-1).to(logits_rmpad.dtype)
""",
    fix_safety=(
        "Safe when nothing that could observe the mutation (the base `output.logits`, another "
        "alias, a caller) is read afterwards; otherwise unsafe. The out-of-place form costs one "
        "copy of the tensor (20 GB for 44k tokens x 248k vocab in fp32, verl #7944): where the "
        "in-place op is kept on purpose, suppress it with `# noqa: IPV001 <reason>`."
    ),
    references=(
        "verl PR 6935; TRL #6553; PyTorch docs: Tensor Views, Autograd mechanics "
        "(In-place operations with autograd)"
    ),
)
