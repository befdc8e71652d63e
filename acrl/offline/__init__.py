"""The BCQ paper's application layer: collecting its datasets (`collect`) and its experiments (`experiments`)."""
