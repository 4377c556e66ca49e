"""Qt models that adapt engine objects for views; they hold no data of their own."""
