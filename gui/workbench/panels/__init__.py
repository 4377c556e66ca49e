"""The workbench's docked panels, one per file, all editing one ``RecipeDocument``."""
