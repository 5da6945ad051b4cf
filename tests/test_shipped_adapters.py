"""Every adapter shipped in ``adapters/`` loads onto the embedded base and changes its output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ADAPTERS = Path(__file__).resolve().parents[1] / "adapters"
SHIPPED = sorted(p.parent for p in ADAPTERS.glob("*/adapter_config.json"))


def test_the_target_adapter_is_shipped() -> None:
    assert ADAPTERS / "smollm2-135m-toolcall" in SHIPPED


@pytest.mark.parametrize("folder", SHIPPED, ids=[p.name for p in SHIPPED])
def test_shipped_adapter_is_small_half_precision_and_portable(folder: Path) -> None:
    from safetensors import safe_open

    weights = folder / "adapter_model.safetensors"
    assert weights.stat().st_size <= 25 * 1024 * 1024
    with safe_open(str(weights), "pt") as handle:
        dtypes = {str(handle.get_tensor(k).dtype) for k in handle.keys()}  # noqa: SIM118
    assert dtypes <= {"torch.float16", "torch.bfloat16"}, dtypes
    config = json.loads((folder / "adapter_config.json").read_text())
    assert not Path(str(config["base_model_name_or_path"])).is_absolute()
    card = (folder / "README.md").read_text()
    assert "## Reproduce" in card or "python " in card  # the card says how to rebuild it


@pytest.mark.slow
@pytest.mark.parametrize("folder", SHIPPED, ids=[p.name for p in SHIPPED])
def test_shipped_adapter_loads_and_changes_the_forward_pass(folder: Path) -> None:
    torch = pytest.importorskip("torch")
    from ooo_agent.errors import ModelNotAvailableError
    from ooo_agent.models import attach_adapter, load_smollm2

    try:
        base, tokenizer = load_smollm2()
    except ModelNotAvailableError as exc:
        pytest.skip(f"embedded model not obtainable here: {exc}")
    ids = tokenizer("What is the weather in Paris?", return_tensors="pt").input_ids
    with torch.no_grad():
        plain = base(input_ids=ids).logits.clone()
        adapted = attach_adapter(base, folder, merge=True)(input_ids=ids).logits
    assert torch.isfinite(adapted).all()
    assert not torch.allclose(plain, adapted, atol=1e-3)
