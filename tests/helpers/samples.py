"""The bundled sample models, found from this checkout (the tests read them; the app finds them in gui.samples)."""

from pathlib import Path

SAMPLES = Path(__file__).resolve().parents[2] / "resources" / "samples"
