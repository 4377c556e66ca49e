"""What the export writes: Burnpack or SafeTensors, "Dequantize" for a quantized model, Burn's quantization of the
float weights for a Burnpack, and the Burn release."""

from __future__ import annotations

from PySide6.QtWidgets import QCheckBox, QComboBox, QHBoxLayout, QLabel, QWidget

from engine import (
    BURN_VERSIONS,
    QUANTIZED_VALUES,
    WRITABLE_FORMATS,
    BurnVersion,
    QuantizeSpec,
    parse_burn_version,
)


class FormatRow(QWidget):
    """``format_combo``, ``dequantize`` (visible for a quantized model), ``burn_label`` and ``burn_combo``
    (visible while Burnpack is chosen: the release only means something there)."""

    def __init__(self, burn_version: BurnVersion, quantized: bool, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.format_combo = QComboBox()
        self.format_combo.setObjectName("exportFormat")
        for fmt in WRITABLE_FORMATS:
            self.format_combo.addItem(f"{fmt.label} ({fmt.extensions[0]})", fmt.name)
        self.burn_combo = QComboBox()
        self.burn_combo.setObjectName("exportBurnVersion")
        self.burn_combo.setToolTip("The Burn release the Burnpack must load in: it decides how bools and "
                                   "quantization schemes are spelled")
        for version in BURN_VERSIONS:
            self.burn_combo.addItem(f"Burn {version}", version)
        self.burn_combo.setCurrentIndex(self.burn_combo.findData(burn_version.value))
        self.burn_label = QLabel("for")
        self.dequantize = QCheckBox("Dequantize")
        self.dequantize.setObjectName("exportDequantize")
        self.dequantize.setToolTip("Write quantized tensors as their F32 values (SafeTensors has no quantized dtype)")
        self.dequantize.setVisible(quantized)
        self.quantize = QComboBox()
        self.quantize.setObjectName("exportQuantize")
        self.quantize.setToolTip("Quantize float weights as Burn's quantize_dynamic does (min-max, symmetric, blocks of "
                                 "32 along the last dimension); norms, biases and embeddings stay float")
        self.quantize.addItem("Float weights", None)
        for value in QUANTIZED_VALUES:
            self.quantize.addItem(f"Quantize {value}", value)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.format_combo, 1)
        row.addWidget(self.dequantize)
        row.addWidget(self.quantize)
        row.addWidget(self.burn_label)
        row.addWidget(self.burn_combo)
        self.format_combo.currentIndexChanged.connect(self.show_burn_choice)

    def format(self) -> str:
        return self.format_combo.currentData()

    def quantize_spec(self) -> QuantizeSpec | None:
        """Burn's quantization chosen for a Burnpack (None: float weights stay float)."""
        value = self.quantize.currentData()
        return QuantizeSpec(value) if value and self.format() == "burnpack" else None

    def burn_version(self) -> BurnVersion:
        """The Burn release chosen (the recipe's until changed here)."""
        return parse_burn_version(self.burn_combo.currentData())

    def follow_extension(self, fmt: str | None) -> bool:
        """Choose ``fmt`` (the format a typed extension names) without counting as the user's choice; True
        when the format changed."""
        index = self.format_combo.findData(fmt)
        if index < 0 or index == self.format_combo.currentIndex():
            return False
        self.format_combo.blockSignals(True)
        self.format_combo.setCurrentIndex(index)
        self.format_combo.blockSignals(False)
        self.show_burn_choice()
        return True

    def show_burn_choice(self) -> None:
        burnpack_chosen = self.format() == WRITABLE_FORMATS[0].name
        self.burn_combo.setVisible(burnpack_chosen)
        self.burn_label.setVisible(burnpack_chosen)
        self.quantize.setVisible(burnpack_chosen)
