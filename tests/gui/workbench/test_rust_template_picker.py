"""The template picker takes the Burn model's Rust source (a .rs file or a crate's folder) as it takes a .bpk: the
preview counts shapes set at run time apart, the diff view compares names and shapes (it has no values to read),
Copy as Rust names the struct, and the picker's Open accepts a folder only when it chooses a template."""

from __future__ import annotations

import textwrap
from pathlib import Path

import torch
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QDialogButtonBox

from engine.formats.rust_model import RustTemplate
from gui.main_window import MainWindow
from gui.model_picker import ModelPicker
from tests.helpers.gui_workbench import settle

MODEL = """
    #[derive(Module, Debug)]
    pub struct Net<B: Backend> { fc1: Linear<B>, fc2: Linear<B>, heads: Vec<Linear<B>> }
    impl NetConfig {
        pub fn init<B: Backend>(&self, device: &B::Device) -> Net<B> {
            Net { fc1: LinearConfig::new(3, self.hidden).init(device),
                  fc2: LinearConfig::new(self.hidden, 2).init(device),
                  heads: (0..self.n).map(|_| LinearConfig::new(2, 2).init(device)).collect() }
        }
    }
"""


def files(tmp_path: Path) -> tuple[Path, Path]:
    """A torch model in Burn's layout already (so no adapter is needed) and the Rust source of its struct."""
    torch.manual_seed(0)
    state = {"fc1.weight": torch.zeros(3, 4), "fc1.bias": torch.zeros(4), "fc2.weight": torch.zeros(4, 2),
             "fc2.bias": torch.zeros(2), "heads.0.weight": torch.zeros(2, 2), "heads.0.bias": torch.zeros(2)}
    source = tmp_path / "net.pt"
    torch.save(state, source)
    model = tmp_path / "model.rs"
    model.write_text(textwrap.dedent(MODEL))
    return source, model


def test_a_rust_template_is_aligned_and_compared_by_names_and_shapes(window: MainWindow, surgery, qtbot, monkeypatch,
                                                                     tmp_path: Path):
    source, model = files(tmp_path)
    document = surgery(source)
    monkeypatch.setattr("gui.workbench.template_picker.choose_model", lambda *a, **k: model)
    window.actions.set_template.trigger()
    qtbot.waitUntil(lambda: document.template is not None, timeout=30_000)
    settle(qtbot, document)
    assert isinstance(document.template, RustTemplate) and document.recipe.template == str(model)
    assert window.panels["preview"].notes.text() == ("Template model.rs: 6 applied (3 with a shape set at run time) · "
                                                     "0 shape mismatches · 0 missing · 0 unused")

    window.actions.diff.trigger()
    panel = window.diff_dock.widget()
    panel.use_template()
    qtbot.waitUntil(lambda: panel.is_idle() and panel.model.rowCount() == 6, timeout=30_000)
    assert not panel.values_box.isEnabled() and not panel.values_box.isChecked()
    rows = {row.name: row for row in panel.model.rows}
    assert {row.status for row in rows.values()} == {"applied"}
    assert rows["fc1.weight"].note == "the model sets its shape [3, ?] at run time"
    assert rows["heads.0.bias"].other.shape == (2,)  # an element of the Vec whose length the model sets

    window.actions.copy_rust.trigger()
    assert "// model: Net<B>, the struct Net at model.rs:3 (the template), as your code builds it" in \
        QGuiApplication.clipboard().text().splitlines()


def test_the_template_picker_opens_a_folder_and_the_others_do_not(qtbot, tmp_path: Path):
    (tmp_path / "src").mkdir()
    for template, enabled in ((True, True), (False, False)):
        picker = ModelPicker(None, "Choose", str(tmp_path), template=template)
        qtbot.addWidget(picker)
        picker.box.setEditText(str(tmp_path / "src"))
        assert picker.buttons.button(QDialogButtonBox.StandardButton.Open).isEnabled() is enabled
        picker.box.setEditText(f"{tmp_path / 'src'}::Net")
        assert picker.buttons.button(QDialogButtonBox.StandardButton.Open).isEnabled() is enabled
