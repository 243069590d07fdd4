"""Pure-Python domain: context items, envelope, placement, messages, chats. No I/O frameworks."""
