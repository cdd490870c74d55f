"""What researchers use: studies, the dashboard, roster, exports and codebook."""
