"""The built book: HTML in headless Chromium, JupyterLab, the PDF, and the back
matter.
"""
