"""Per-user notification settings; email and signed webhooks with retries and a delivery log."""
