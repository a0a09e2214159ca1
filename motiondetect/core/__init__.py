"""What every layer uses: errors, the decoded picture, the types passed between stages, signals,
fault classification and progress bars. Imports nothing else of the package."""
