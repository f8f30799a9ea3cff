"""IPV001: in-place op on a model output or on a view of one."""
from ..findings import Origin, RootKind
from .base import Example, Rule, Write


def applies(origin: Origin, write: Write) -> bool:
    # a model output made with grad off needs no grad: writing it later cannot raise
    # (docs/pytorch-facts.md#grad-off)
    return origin.root in (RootKind.MODEL_OUTPUT, RootKind.MODEL_OUTPUT_OBJECT) and origin.is_tensor \
        and not origin.root_no_grad


RULE = Rule(
    code="IPV001",
    name="inplace-on-model-output",
    severity="warning",
    summary="In-place op on a model output (`output.logits`, `outputs[0]`) or a view of one.",
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
        "a custom Function ...` (docs/pytorch-facts.md#custom-function-view). Where autograd does "
        "not object, the write silently changes `output.logits` for every later reader, e.g. "
        "logits divided twice by the temperature (docs/pytorch-facts.md#silent-alias). This is the "
        "verl FSDP temperature-scaling crash (verl PR 6935). On a slice of logits it also keeps a "
        "full-size `CopySlices` gradient buffer alive (TRL #6553). It is a warning, not an error: "
        "with a plain linear head the write is legal."
    ),
    fix_safety=(
        "Safe when nothing that could observe the mutation (the base `output.logits`, another "
        "alias, a caller) is read afterwards; otherwise unsafe. The out-of-place form costs one "
        "copy of the tensor (20 GB for 44k tokens x 248k vocab in fp32, verl #7944; "
        "docs/pytorch-facts.md#out-of-place-memory): where the in-place op is kept on purpose, "
        "suppress it with `# noqa: IPV001 <reason>`."
    ),
    references=(
        "verl PR 6935; TRL #6553; PyTorch docs: Tensor Views, Autograd mechanics "
        "(In-place operations with autograd); docs/pytorch-facts.md#custom-function-view"
    ),
    invalid=(
        Example(
            """
            def scale_logits(model, batch, temperature):
                output = model(**batch)
                logits_rmpad = output.logits.squeeze(0)
                logits_rmpad.div_(temperature)
                return logits_rmpad
            """,
            message="`div_` writes in place to `logits_rmpad`, a view of model output `output.logits`",
            fix="""
                try:
                    from torch.distributed.tensor import DTensor
                except ImportError:  # torch < 2.5
                    from torch.distributed._tensor import DTensor

                def scale_logits(model, batch, temperature):
                    output = model(**batch)
                    logits_rmpad = output.logits.squeeze(0)
                    if isinstance(logits_rmpad, DTensor) and not isinstance(temperature, DTensor) and getattr(temperature, "ndim", 0) > 0:
                        logits_rmpad = logits_rmpad.full_tensor()
                    logits_rmpad = logits_rmpad.clone().div_(temperature)
                    return logits_rmpad
                """,
        ),
        Example(
            """
            def last_token_scores(model, ids, temperature):
                scores = model(ids).logits[:, -1, :]
                scores /= temperature
                return scores
            """,
            message="`/=` writes in place to `scores`, a view of model output `model(ids).logits`",
            fix="""
                try:
                    from torch.distributed.tensor import DTensor
                except ImportError:  # torch < 2.5
                    from torch.distributed._tensor import DTensor

                def last_token_scores(model, ids, temperature):
                    scores = model(ids).logits[:, -1, :]
                    if isinstance(scores, DTensor) and not isinstance(temperature, DTensor) and getattr(temperature, "ndim", 0) > 0:
                        scores = scores.full_tensor()
                    scores = scores.clone().div_(temperature)
                    return scores
                """,
        ),
    ),
    valid=(
        """
        def scale_logits(model, batch, temperature):
            output = model(**batch)
            logits_rmpad = output.logits.squeeze(0)
            logits_rmpad = logits_rmpad / temperature
            return logits_rmpad
        """,
        """
        import torch

        def scale_logits(model, batch, temperature):
            with torch.no_grad():
                logits = model(**batch).logits.squeeze(0)
                logits.div_(temperature)
            return logits
        """,
        """
        def scale_logits(model, batch, temperature):
            logits = model(**batch).logits.clone()
            logits.div_(temperature)
            return logits
        """,
    ),
)
