"""The export dialog's sections, one composite widget per file (as napari keeps one control per file).

Each section builds and lays out its own widgets and holds the little behaviour that is only its own;
``gui.workbench.export_dialog.ExportDialog`` places them and wires them to the plan and the export.
"""
