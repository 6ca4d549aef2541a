"""Money over months: the P&L and cash view, unit economics, and alerts."""
