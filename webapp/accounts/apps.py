from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "webapp.accounts"
    label = "accounts"

    def ready(self):
        from django.contrib.auth.signals import user_logged_in

        from webapp.accounts.language import at_sign_in
        from webapp.accounts.password_change import mark_session

        user_logged_in.connect(mark_session, dispatch_uid="accounts-one-time-password")
        user_logged_in.connect(at_sign_in, dispatch_uid="accounts-language")
