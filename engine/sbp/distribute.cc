// placeholder: implemented by the session building distribute
