"""The leak audit: every process a drill started written down (`ledger`), what the audit must look
at (`scope`), its two steps during the teardown (`steps`), and the verdict (`leakaudit`)."""
